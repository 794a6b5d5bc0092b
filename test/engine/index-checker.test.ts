import { describe, expect, it, vi } from 'vitest';
import { isCheckTooComplex, overBudget } from '../../src/engine/budget.ts';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { IndexChecker, indexRuleGraph, type IndexedTenant } from '../../src/engine/index-checker.ts';
import { parseRef, type Triple } from '../../src/engine/refs.ts';
import { RuleDecision } from '../../src/engine/rule-check.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { grant, RULED_DOCUMENT_RELATIONS, SpentSlice } from './fixtures.ts';

/**
 * IndexChecker on its own, with no database (docs/decisions.md#mutation-testing): where a bulk sends
 * each query, the agent masks on checks and listings, checkOne's slice and problems, a ruled check
 * giving way and starting again, the listing walks' ranking in slices. Its agreement with PostgreSQL
 * is property.test.ts's and rule-cases.test.ts's.
 */
const schema = new CompiledSchema([
  { name: 'document', relations: RULED_DOCUMENT_RELATIONS },
  { name: 'org', relations: null },
  { name: 'group', relations: null },
  { name: 'user', relations: null },
]);

/**
 * Ann owns d1 and is a member of its org (so she is its editor and viewer), bob owns it and is
 * blocked, agent a1 owns it with a scope covering owner only, agent a2 owns it unregistered.
 */
function tenantOf(agents: Record<string, string[]> = { a1: ['document:owner'] }): IndexedTenant {
  const index = new GrantIndex();
  const grants: [string, string, string][] = [
    ['user:ann', 'owner', 'document:d1'],
    ['user:bob', 'owner', 'document:d1'],
    ['user:bob', 'blocked', 'document:d1'],
    ['agent:a1', 'owner', 'document:d1'],
    ['agent:a2', 'owner', 'document:d1'],
    ['org:o1', 'org', 'document:d1'],
    ['user:ann', 'member', 'org:o1'],
    ['agent:a1', 'member', 'org:o1'],
  ];
  for (const g of grants) index.add(grant(...g));
  return { index, agents: new Map(Object.entries(agents)) };
}

const query = (subject: string, relation: string, object = 'document:d1') => grant(subject, relation, object);

/** The steps a ruled check takes decided in one unit, or up to its first read when `firstReadOnly`. */
function ruledSteps(tenant: IndexedTenant, q: Triple, firstReadOnly = false): number {
  const decision = new RuleDecision(indexRuleGraph(tenant.index, schema), schema, q, 25_000);
  decision.run(() => firstReadOnly);
  return decision.steps;
}

describe('IndexChecker.check', () => {
  it('answers a bulk of plain and ruled queries in order, counting the steps of the ruled ones only', async () => {
    const tenant = tenantOf();
    const queries = [
      query('user:ann', 'owner'),
      query('user:ann', 'editor'),
      query('user:carl', 'owner'),
      query('user:bob', 'editor'),
      query('user:bob', 'owner'),
      query('user:ann', 'viewer'),
    ];
    const { answers, ruledSteps: steps } = await new IndexChecker().check(tenant, schema, queries);
    expect(answers).toEqual([true, true, false, false, true, true]);
    // Plain queries go to the plain walk: the rule evaluator (which answers them too) would count their steps.
    expect(steps).toBe(ruledSteps(tenant, queries[1]!) + ruledSteps(tenant, queries[3]!) + ruledSteps(tenant, queries[5]!));
  });

  it('says nothing of ruled steps for a bulk of plain queries', async () => {
    const response = await new IndexChecker().check(tenantOf(), schema, [query('user:ann', 'owner'), query('user:carl', 'owner')]);
    expect(response).toStrictEqual({ answers: [true, false] });
  });

  it("applies the agents' masks to plain and ruled queries alike", async () => {
    const queries = [query('agent:a1', 'owner'), query('agent:a1', 'editor'), query('agent:a2', 'owner'), query('agent:a2', 'editor')];
    expect((await new IndexChecker().check(tenantOf(), schema, queries)).answers).toEqual([true, false, false, false]);
    const covering = tenantOf({ a1: ['document:*'] });
    expect((await new IndexChecker().check(covering, schema, queries)).answers).toEqual([true, true, false, false]);
  });

  it('gives way before each ruled query and between the reads of one, going on from where it stopped', async () => {
    const tenant = tenantOf();
    const slice = new SpentSlice();
    const viewer = query('user:ann', 'viewer');
    const response = await new IndexChecker().check(tenant, schema, [viewer], slice);
    expect(response).toEqual({ answers: [true], ruledSteps: ruledSteps(tenant, viewer) });
    // viewer's five reads (docs/model.md's example: its base, editor, blocked, org, member on o1): a pause before it and after each but the last.
    expect(slice.pauses).toBe(5);
  });

  it('starts a ruled check again when the grants change while it gives way, and decides it in one unit on the third try', async () => {
    const tenant = tenantOf();
    const blocked = grant('user:ann', 'blocked', 'document:d1');
    // Every pause blocks ann or unblocks her: the first (before the check) blocks her, the first two tries each stop at their first read.
    const slice = new SpentSlice(() => tenant.index.flip(blocked));
    const viewer = query('user:ann', 'viewer');
    const { answers, ruledSteps: steps } = await new IndexChecker().check(tenant, schema, [viewer], slice);
    expect(slice.pauses).toBe(3);
    expect(tenant.index.holds(blocked)).toBe(true);
    expect(answers).toEqual([false]);
    // Each try's steps: the first two up to their first read (blocked, then not), the third whole (blocked).
    const firstReadBlocked = ruledSteps(tenant, viewer, true);
    const whole = ruledSteps(tenant, viewer);
    tenant.index.flip(blocked);
    expect(steps).toBe(firstReadBlocked + ruledSteps(tenant, viewer, true) + whole);
  });
});

describe('IndexChecker.checkOne', () => {
  it('answers a plain query, the masks applied, and the problem of one past its budget', () => {
    const tenant = tenantOf();
    const checker = new IndexChecker();
    expect(checker.checkOne(tenant, schema, query('user:ann', 'owner'))).toBe(true);
    expect(checker.checkOne(tenant, schema, query('user:carl', 'owner'))).toBe(false);
    expect(checker.checkOne(tenant, schema, query('agent:a2', 'owner'))).toBe(false);
    // ann's walk to blocked on d1, denied, takes her group (o1) and the pair: 2 steps.
    expect(new IndexChecker(2).checkOne(tenant, schema, query('user:ann', 'blocked'))).toBe(false);
    expect(new IndexChecker(1).checkOne(tenant, schema, query('user:ann', 'blocked'))).toEqual(overBudget(1));
  });

  it('passes on an error that is not a problem of the budget', () => {
    const broken = new Error('the index is broken');
    const index = Object.assign(new GrantIndex(), {
      check: () => {
        throw broken;
      },
    });
    expect(() => new IndexChecker().checkOne({ index, agents: new Map() }, schema, query('user:ann', 'owner'))).toThrow(broken);
  });

  /** checkOne at a clock that reads `first`, then `then` ever after (its deadline is read first). */
  function atClock(first: number, then: number, q: Triple, tenant = tenantOf()) {
    const now = vi.spyOn(performance, 'now').mockReturnValueOnce(first).mockReturnValue(then);
    try {
      return new IndexChecker().checkOne(tenant, schema, q);
    } finally {
      now.mockRestore();
    }
  }

  it('decides a ruled query within a slice, the masks applied', () => {
    expect(atClock(0, 1.9, query('user:ann', 'viewer'))).toBe(true);
    expect(atClock(0, 1.9, query('user:bob', 'viewer'))).toBe(false);
    expect(atClock(0, 1.9, query('agent:a1', 'editor'))).toBe(false);
    expect(atClock(0, 1.9, query('agent:a1', 'editor'), tenantOf({ a1: ['document:*'] }))).toBe(true);
  });

  it('leaves a ruled query that takes a slice (2 ms) to `check`, whatever the masks say', () => {
    expect(atClock(0, 2, query('user:ann', 'viewer'))).toBeUndefined();
    expect(atClock(0, 2, query('agent:a1', 'viewer'))).toBeUndefined();
  });
});

describe('indexRuleGraph', () => {
  it("charges a plain read's queries to one budget, and ends the read at the first past it", () => {
    const tenant = tenantOf();
    const graph = indexRuleGraph(tenant.index, schema);
    // Denied walks, which take every step they count (ann's group and the pair: 2 each).
    const [blocked, parent, other] = [query('user:ann', 'blocked'), query('user:ann', 'parent'), query('user:carl', 'owner')];
    const stepsOf = (q: Triple) => (tenant.index.checkPlain(schema, q, 25_000, 16, false), tenant.index.lastCheckSteps);
    const [blockedSteps, parentSteps] = [stepsOf(blocked), stepsOf(parent)];
    expect(parentSteps).toBeGreaterThan(0);
    const budget = blockedSteps + parentSteps;
    expect(graph.plain([blocked, parent, other], 16, budget, false)).toEqual({ answers: [false, false, false], steps: budget });
    const past = graph.plain([blocked, parent, other], 16, budget - 1, false);
    expect(past.answers).toHaveLength(2);
    expect(past.answers[0]).toBe(false);
    expect(isCheckTooComplex(past.answers[1])).toBe(true);
    expect(past.steps).toBe(blockedSteps);
  });

  it('passes on an error that is not a problem of the budget', () => {
    const broken = new Error('the index is broken');
    const index = Object.assign(new GrantIndex(), {
      checkPlain: () => {
        throw broken;
      },
    });
    expect(() => indexRuleGraph(index, schema).plain([query('user:ann', 'owner')], 16, 100, false)).toThrow(broken);
  });
});

describe('the listing walks of IndexChecker', () => {
  const reachableQuery = (subject: string, relation = 'owner') => ({
    subject: parseRef(subject, 'subject'),
    namespace: 'document',
    relation,
    after: null,
    limit: 100,
    budget: 100_000,
  });
  const holdersQuery = (namespace: string) => ({
    object: parseRef('document:d1', 'object'),
    relation: 'owner',
    namespace,
    after: null,
    limit: 100,
    budget: 100_000,
  });

  it('lists what an agent holds only as far as its scope covers, and nothing for one that is not registered', async () => {
    const checker = new IndexChecker();
    expect(await checker.reachable(tenantOf(), schema, reachableQuery('agent:a1'))).toEqual({ ids: ['d1'] });
    expect(await checker.reachable(tenantOf(), schema, reachableQuery('agent:a1', 'blocked'))).toEqual({ ids: [] });
    expect(await checker.reachable(tenantOf(), schema, reachableQuery('agent:a2'))).toEqual({ ids: [] });
    expect(await checker.reachable(tenantOf(), schema, reachableQuery('user:ann'))).toEqual({ ids: ['d1'] });
  });

  it("lists an object's agent holders whose scopes cover it, and its other holders", async () => {
    const checker = new IndexChecker();
    expect(await checker.holders(tenantOf(), schema, holdersQuery('agent'))).toEqual({ ids: ['a1'] });
    expect(await checker.holders(tenantOf({ a1: ['document:blocked'], a2: ['*:*'] }), schema, holdersQuery('agent'))).toEqual({ ids: ['a2'] });
    expect(await checker.holders(tenantOf(), schema, holdersQuery('user'))).toEqual({ ids: ['ann', 'bob'] });
  });

  /**
   * A tenant with 5,000 more documents ann owns, or 5,000 more users who own d1: a namespace due to
   * be ranked again, past a unit of ranking (id-ranks.ts's RANK_UNIT, a checkpoint).
   */
  function manyNamed(namespace: 'document' | 'user'): IndexedTenant {
    const tenant = tenantOf();
    for (let i = 0; i < 5000; i++) {
      tenant.index.add(namespace === 'document' ? grant('user:ann', 'owner', `document:n${i}`) : grant(`user:u${i}`, 'owner', 'document:d1'));
    }
    return tenant;
  }

  it('ranks the ids in slices, with or without one, and gives null when the grants change meanwhile', async () => {
    const checker = new IndexChecker();
    const few = { ...reachableQuery('user:ann'), limit: 2 };
    const fewHolders = { ...holdersQuery('user'), limit: 2 };
    expect(await checker.reachable(manyNamed('document'), schema, few)).toEqual({ ids: ['d1', 'n0'] });
    expect(await checker.holders(manyNamed('user'), schema, fewHolders)).toEqual({ ids: ['ann', 'bob'] });
    expect(await checker.reachable(manyNamed('document'), schema, few, new SpentSlice())).toEqual({ ids: ['d1', 'n0'] });
    expect(await checker.holders(manyNamed('user'), schema, fewHolders, new SpentSlice())).toEqual({ ids: ['ann', 'bob'] });
    const changing = (tenant: IndexedTenant) => new SpentSlice(() => tenant.index.add(grant('user:ann', 'owner', 'document:late')));
    const documents = manyNamed('document');
    expect(await checker.reachable(documents, schema, few, changing(documents))).toBeNull();
    const users = manyNamed('user');
    expect(await checker.holders(users, schema, fewHolders, changing(users))).toBeNull();
  });
});
