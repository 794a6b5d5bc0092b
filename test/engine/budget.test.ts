import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { isCheckTooComplex, overBudget } from '../../src/engine/budget.ts';
import { DomainError } from '../../src/errors.ts';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { parseRef } from '../../src/engine/refs.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { Walk } from '../../src/engine/walk-pairs.ts';
import { LoopTurn, Slice, WorkMeter } from '../../src/engine/work-meter.ts';
import { grant } from './fixtures.ts';

/**
 * A dense fan-out graph (every node the parent of every other, four relations each including four
 * arrows over `parent`): a denied check would visit every (node, relation) pair and follow every
 * parent grant from each, which a work budget must stop, as docs/ promise for every check.
 */
const FAN_OUT = Object.fromEntries([['parent', {}], ...[1, 2, 3, 4].map((r) => [`r${r}`, { includes: [1, 2, 3, 4].map((t) => `parent->r${t}`) }])]);
const schema = new CompiledSchema([
  { name: 'node', relations: FAN_OUT },
  { name: 'user', relations: null },
]);

function fanOut(nodes: number): GrantIndex {
  const index = new GrantIndex();
  for (let a = 0; a < nodes; a++) for (let b = 0; b < nodes; b++) if (a !== b) index.add(grant(`node:n${a}`, 'parent', `node:n${b}`));
  index.add(grant('user:owner', 'r1', 'node:n0'));
  index.add(grant('user:stranger', 'r1', 'user:elsewhere')); // a subject the index knows, who holds nothing here
  return index;
}

describe('the work budget of a check', () => {
  const index = fanOut(100); // 9,900 parent grants: a denied check expands ~400 pairs and reads ~40,000 grants

  it('stops a check that would take more steps than the budget, with check-too-complex', () => {
    expect(() => index.check(schema, grant('user:stranger', 'r1', 'node:n5'), 25_000)).toThrow(overBudget(25_000));
    // The same check with room enough is answered: the budget is what refused it.
    expect(index.check(schema, grant('user:stranger', 'r1', 'node:n5'), 1_000_000)).toBe(false);
  });

  it('refuses a level that would take a check past its budget before following any of its grants', () => {
    const visits = vi.spyOn(Walk.prototype, 'visit');
    try {
      expect(() => index.check(schema, grant('user:stranger', 'r1', 'node:n5'), 25_000)).toThrow(overBudget(25_000));
      // n5, then its 99 parents with r1-r4; the next level (396 pairs of 99 parents each) is counted, not followed.
      expect(visits).toHaveBeenCalledTimes(1 + 99 * 4);
    } finally {
      visits.mockRestore();
    }
  });

  it('answers a check that finds the subject within the budget', () => {
    // owner holds r1 on n0, the parent of every node: one arrow away.
    expect(index.check(schema, grant('user:owner', 'r1', 'node:n5'), 25_000)).toBe(true);
  });

  it('bounds a listing walk by the grants it reads as well as the pairs it finds', () => {
    const query = { subject: parseRef('user:owner', 'subject'), namespace: 'node', relation: 'r1', after: null, limit: 10 };
    // 400 pairs at most, but every pair's node has 99 parent grants to read.
    expect(index.reachable(schema, { ...query, budget: 1_000 })).toBeNull();
    expect(index.reachable(schema, { ...query, budget: 1_000_000 })).toEqual(['n0', 'n1', 'n10', 'n11', 'n12', 'n13', 'n14', 'n15', 'n16', 'n17']);
  });
});

describe('checkAll (a bulk of checks)', () => {
  const index = fanOut(100);

  it('answers each check as check does, and an error for each one past the budget', async () => {
    const queries = ['owner', 'stranger', 'owner', 'stranger'].map((who, i) => grant(`user:${who}`, `r${1 + i}`, `node:n${10 + i}`));
    const answers = await index.checkAll(schema, queries, 25_000);
    expect(answers).toEqual([true, overBudget(25_000), true, overBudget(25_000)]);
    // Each query alone: its answer, or the error it throws.
    const alone = queries.map((query) => {
      try {
        return index.check(schema, query, 25_000);
      } catch (error) {
        return error;
      }
    });
    expect(alone).toEqual(answers);
  });

  it('walks an (object, relation) once for every subject asking, and answers them as separate checks would', async () => {
    const subjects = Array.from({ length: 50 }, (_, i) => `user:u${i}`);
    const small = fanOut(8);
    subjects.forEach((s, i) => i % 5 === 0 && small.add(grant(s, 'r2', `node:n${i % 8}`)));
    const queries = subjects.map((s) => grant(s, 'r1', 'node:n3'));
    const separately = queries.map((q) => small.check(schema, q));
    expect(await small.checkAll(schema, queries)).toEqual(separately);
    expect(separately.filter(Boolean)).toHaveLength(10);
  });

  it('lets other work run while a costly bulk is answered', async () => {
    const queries = Array.from({ length: 200 }, (_, i) => grant('user:stranger', `r${1 + (i % 4)}`, `node:n${i % 100}`));
    let ranMeanwhile = false;
    setImmediate(() => {
      ranMeanwhile = true;
    });
    const answers = checkAllTracking(index, queries);
    // Synchronously the bulk has not finished yet, and it only can if it gave the event loop back.
    expect(await answers.then((a) => ({ ranBefore: a.ranBeforeEnd, count: a.answers.length }))).toEqual({ ranBefore: true, count: 200 });
    expect(ranMeanwhile).toBe(true);
  });

  it('forgets the walks it remembered when the grants change meanwhile', async () => {
    const small = fanOut(8);
    const queries = Array.from({ length: 3 }, () => grant('user:late', 'r1', 'node:n3'));
    small.add(grant('user:late', 'r1', 'user:known')); // known to the index, holding nothing on nodes yet
    const pending = small.checkAll(schema, queries, 25_000, { slice: WorkMeter.unmetered(0) }); // yields before every check
    // Added while the bulk yields: a new parent of n3 that the first walk did not reach, held by late.
    setImmediate(() => {
      small.add(grant('node:extra', 'parent', 'node:n3'));
      small.add(grant('user:late', 'r1', 'node:extra'));
    });
    expect(await pending).toEqual([false, true, true]);
  });
});

/** Runs checkAll and tells whether a callback queued after it started ran before it ended. */
async function checkAllTracking(index: GrantIndex, queries: ReturnType<typeof grant>[]) {
  let ran = false;
  setImmediate(() => {
    ran = true;
  });
  const answers = await index.checkAll(schema, queries, 25_000);
  return { answers, ranBeforeEnd: ran };
}

describe('the names an index interns', () => {
  it('are forgotten once no grant uses them, and weigh in its footprint meanwhile', () => {
    const index = new GrantIndex();
    const base = index.footprint;
    for (let i = 0; i < 10_000; i++) index.add(grant(`ns${i}:x`, `rel${i}`, 'document:d1'));
    expect(index.footprint).toBeGreaterThan(index.size + 4 * 19_000);
    for (let i = 0; i < 10_000; i++) index.remove(grant(`ns${i}:x`, `rel${i}`, 'document:d1'));
    index.add(grant('user:ann', 'viewer', 'document:d1'));
    // What is left: a grant, its namespaces and relation, and names that never held more than 1,024 unused.
    expect(index.footprint).toBeLessThan(base + 1 + 4 * (3 + 2 * 1024));
  });

  it('leave checks right after a sweep renumbers them', () => {
    const index = new GrantIndex();
    index.add(grant('node:a', 'parent', 'node:b'));
    index.add(grant('user:ann', 'r1', 'node:a'));
    expect(index.check(schema, grant('user:ann', 'r2', 'node:b'))).toBe(true);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 5_000; i++) index.add(grant(`ns${round}x${i}:x`, `rel${i}`, 'user:z'));
      for (let i = 0; i < 5_000; i++) index.remove(grant(`ns${round}x${i}:x`, `rel${i}`, 'user:z'));
      index.add(grant(`user:extra${round}`, 'r3', 'node:b'));
      expect(index.check(schema, grant('user:ann', 'r2', 'node:b'))).toBe(true);
      expect(index.check(schema, grant(`user:extra${round}`, 'r3', 'node:b'))).toBe(true);
      expect(index.check(schema, grant('user:ann', 'r3', 'node:c'))).toBe(false);
    }
  });
});

describe('a sweep of the names no grant uses', () => {
  it('keeps the member relation, which no grant used, so that groups count after it', () => {
    const index = new GrantIndex();
    for (let i = 0; i < 5_000; i++) index.add(grant(`ns${i}:x`, `rel${i}`, 'user:z'));
    for (let i = 0; i < 5_000; i++) index.remove(grant(`ns${i}:x`, `rel${i}`, 'user:z'));
    index.add(grant('user:ann', 'member', 'team:t'));
    index.add(grant('team:t', 'r1', 'node:a'));
    expect(index.check(schema, grant('user:ann', 'r1', 'node:a'))).toBe(true);
  });
});

describe('a check whose subject belongs to many groups', () => {
  const docs = new CompiledSchema([
    { name: 'doc', relations: { parent: {}, folder: {}, viewer: { includes: ['parent->viewer', 'folder->viewer'] } } },
    { name: 'user', relations: null },
    { name: 'team', relations: null },
  ]);

  it('finds the one group that holds the relation, on short and on indexed lists of holders', () => {
    const index = new GrantIndex();
    for (let i = 0; i < 40; i++) index.add(grant('user:ann', 'member', `team:t${i}`));
    for (let i = 0; i < 30; i++) index.add(grant(`doc:p${i}`, 'parent', 'doc:o'));
    for (let i = 0; i < 30; i++) index.add(grant(`team:other${i}`, 'viewer', 'doc:p7')); // p7's holders are indexed
    index.add(grant('team:t33', 'viewer', 'doc:p7'));
    index.add(grant('team:t12', 'viewer', 'doc:p3')); // p3's are a short list
    index.add(grant('user:bob', 'member', 'team:none'));
    expect(index.check(docs, grant('user:ann', 'viewer', 'doc:o'))).toBe(true);
    expect(index.check(docs, grant('user:bob', 'viewer', 'doc:o'))).toBe(false);
    index.remove(grant('team:t33', 'viewer', 'doc:p7'));
    expect(index.check(docs, grant('user:ann', 'viewer', 'doc:o'))).toBe(true); // still t12 on p3
    index.remove(grant('team:t12', 'viewer', 'doc:p3'));
    expect(index.check(docs, grant('user:ann', 'viewer', 'doc:o'))).toBe(false);
  });

  it('counts its groups and their matching against the budget', () => {
    const index = new GrantIndex();
    for (let i = 0; i < 2_000; i++) index.add(grant('user:ann', 'member', `team:t${i}`));
    for (let i = 0; i < 50; i++) index.add(grant(`doc:p${i}`, 'parent', 'doc:o'));
    for (let i = 0; i < 50; i++) index.add(grant(`team:x${i}`, 'viewer', `doc:p${i}`));
    // 2,000 groups, 1 pair and 50 parents, then 50 pairs each matched against their one holder: 2,101.
    expect(() => index.check(docs, grant('user:ann', 'viewer', 'doc:o'), 2_100)).toThrow(overBudget(2_100));
    expect(index.check(docs, grant('user:ann', 'viewer', 'doc:o'), 2_200)).toBe(false);
  });
});

describe('a walk stopped by the budget', () => {
  it('gives the same answer alone and in a bulk after another subject: its unmatched pairs are not reused', async () => {
    const docs = new CompiledSchema([
      { name: 'doc', relations: { parent: {}, folder: {}, v: { includes: ['parent->v', 'folder->v'] } } },
      { name: 'user', relations: null },
    ]);
    const index = new GrantIndex();
    for (let i = 1; i <= 3; i++) index.add(grant(`doc:p${i}`, 'parent', 'doc:o'));
    for (let i = 1; i <= 10; i++) index.add(grant(`doc:f${i}`, 'folder', 'doc:o'));
    index.add(grant('user:alice', 'v', 'doc:p1'));
    index.add(grant('user:bob', 'v', 'doc:elsewhere'));
    const alice = grant('user:alice', 'v', 'doc:o');
    expect(() => index.check(docs, alice, 5)).toThrow(overBudget(5));
    expect(await index.checkAll(docs, [grant('user:bob', 'v', 'doc:o'), alice], 5)).toEqual([overBudget(5), overBudget(5)]);
  });
});

describe('check-too-complex', () => {
  it('names the budget, and is told apart from other errors and problems', () => {
    expect(overBudget(25).detail).toMatch(/^the check would take more than 25 steps /);
    expect(isCheckTooComplex(overBudget(25))).toBe(true);
    expect(isCheckTooComplex(new DomainError('invalid-request', 'no'))).toBe(false);
    expect(isCheckTooComplex(Object.assign(new Error('check-too-complex'), { type: 'check-too-complex' }))).toBe(false);
  });
});

describe("checkAll's remembered walks and turns", () => {
  const index = fanOut(100);
  index.add(grant('user:third', 'r1', 'user:elsewhere')); // holds a grant, none on nodes

  it('answers a later subject from a walk the budget stopped only on the pairs that walk matched, else check-too-complex', async () => {
    // The stranger's walk matches n5's pairs and its 99 parents' before the next level passes the budget; owner holds r1 on n0, a parent.
    const queries = ['stranger', 'owner', 'third'].map((who) => grant(`user:${who}`, 'r1', 'node:n5'));
    const separately = queries.map((query) => {
      try {
        return index.check(schema, query, 25_000);
      } catch (error) {
        return error;
      }
    });
    expect(separately).toEqual([overBudget(25_000), true, overBudget(25_000)]);
    expect(await index.checkAll(schema, queries, 25_000)).toEqual(separately);
  });

  it('reads the grants as they are after a pause that waited its turn', async () => {
    const small = fanOut(8);
    let waited = false;
    // A grant naming node:new arrives while the bulk waits (here, as it is told to): the bulk looked
    // the object up before, when nothing named it, and must look it up again.
    const wait = () => (waited ? 0 : ((waited = true), small.add(grant('user:late', 'r1', 'node:new')), 1));
    const queries = [grant('user:late', 'r1', 'node:new'), grant('user:owner', 'r1', 'node:n3')];
    const slice = new Slice('a tenant', { wait, spent: () => undefined }, new LoopTurn(0), performance);
    expect(await small.checkAll(schema, queries, 25_000, { slice })).toEqual([true, true]);
  });

  it('pauses its slice before each check once the slice is spent, which asks the turns and tells them its time', async () => {
    const queries = ['owner', 'stranger', 'owner'].map((who) => grant(`user:${who}`, 'r1', 'node:n3'));
    const turns = { wait: vi.fn(() => 0), spent: vi.fn() };
    // A slice of 0 ms: the bulk gives way before every check.
    expect(await fanOut(8).checkAll(schema, queries, 25_000, { slice: new Slice('a tenant', turns, new LoopTurn(0), performance) })).toEqual([
      true,
      false,
      true,
    ]);
    expect(turns.wait).toHaveBeenCalledTimes(queries.length);
    expect(turns.spent).toHaveBeenCalledTimes(queries.length);
    for (const [ms] of turns.spent.mock.calls) expect(ms).toBeGreaterThanOrEqual(0);
  });

  it('fails with an error that is not check-too-complex rather than answering it', async () => {
    const admits = () => {
      throw new Error('mask lookup failed');
    };
    await expect(index.checkAll(schema, [grant('user:owner', 'r1', 'node:n3')], 25_000, { admits })).rejects.toThrow('mask lookup failed');
  });
});

describe('a bulk item answers exactly as the same single check', () => {
  const docs = new CompiledSchema([
    { name: 'doc', relations: { parent: {}, viewer: { includes: ['parent->viewer'] } } },
    { name: 'user', relations: null },
    { name: 'team', relations: null },
  ]);
  const index = new GrantIndex();
  for (let i = 1; i <= 3; i++) index.add(grant(`doc:p${i}`, 'parent', 'doc:o'));
  index.add(grant('user:a', 'viewer', 'doc:elsewhere')); // a subject of the index, in no group
  for (let i = 1; i <= 5; i++) index.add(grant('user:c', 'member', `team:t${i}`));
  const [a, c] = [grant('user:a', 'viewer', 'doc:o'), grant('user:c', 'viewer', 'doc:o')];

  it("charges a later subject's groups when it reuses another subject's walk", async () => {
    // a: 1 pair and 3 parents, then 3 pairs: 7 steps. c: 5 groups more: past a budget of 8.
    expect(index.check(docs, a, 8)).toBe(false);
    expect(() => index.check(docs, c, 8)).toThrow(overBudget(8));
    expect(await index.checkAll(docs, [a, c], 8)).toEqual([false, overBudget(8)]);
  });

  it('walks afresh for a subject of fewer groups than the one whose walk the budget stopped', async () => {
    // c's walk stops at its first level (5 + 1 + 3 > 8); a's goes on to the end within the budget.
    expect(await index.checkAll(docs, [c, a], 8)).toEqual([overBudget(8), false]);
    index.add(grant('user:a', 'viewer', 'doc:p2'));
    try {
      expect(await index.checkAll(docs, [c, a], 8)).toEqual([overBudget(8), true]);
    } finally {
      index.remove(grant('user:a', 'viewer', 'doc:p2'));
    }
  });

  it('holds for any subjects, groups, parents and budget (a property)', async () => {
    const subjects = fc.array(fc.record({ groups: fc.nat(12), holds: fc.option(fc.nat(6), { nil: undefined }) }), { minLength: 1, maxLength: 6 });
    await fc.assert(
      fc.asyncProperty(subjects, fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 30 }), async (people, parents, budget) => {
        const graph = new GrantIndex();
        for (let p = 0; p < parents; p++) graph.add(grant(`doc:p${p}`, 'parent', 'doc:o'));
        people.forEach(({ groups, holds }, s) => {
          graph.add(grant(`user:s${s}`, 'viewer', 'doc:elsewhere'));
          for (let g = 0; g < groups; g++) graph.add(grant(`user:s${s}`, 'member', `team:t${g}`));
          if (holds !== undefined) graph.add(grant(`user:s${s}`, 'viewer', `doc:p${holds}`));
        });
        const queries = people.map((_, s) => grant(`user:s${s}`, 'viewer', 'doc:o'));
        const alone = queries.map((query) => {
          try {
            return graph.check(docs, query, budget);
          } catch (error) {
            return error;
          }
        });
        expect(await graph.checkAll(docs, queries, budget)).toEqual(alone);
      }),
      { numRuns: 300 },
    );
  });
});
