import { beforeEach, describe, expect, it, vi } from 'vitest';
import { overBudget } from '../../src/engine/budget.ts';
import { EdgeLists } from '../../src/engine/edge-lists.ts';
import { explainCheck, grantWindow, IndexChanged, indexGraph, type ExplainGraph, type WindowedGrant } from '../../src/engine/explain.ts';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { windowOf } from '../../src/engine/grant-window.ts';
import { formatRef, parseRef } from '../../src/engine/refs.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { WorkMeter } from '../../src/engine/work-meter.ts';
import { DOCUMENT_RELATIONS, FOLDER_RELATIONS } from './fixtures.ts';

/**
 * explainCheck over a graph that answers from a list of grants with validity windows: how it
 * chooses the path and the reason (the stores' graphs are subjects-explain.test.ts's and the
 * property tests').
 */
const NOW = Date.parse('2026-11-24T12:00:00Z');
const HOUR = 3_600_000;
let schema: CompiledSchema;
// Compiled in each test, not as the file loads: explain makes its tables once per schema, and
// `npm run mutate` credits a test with the code it runs.
beforeEach(() => {
  schema = new CompiledSchema([
    { name: 'document', relations: DOCUMENT_RELATIONS },
    { name: 'folder', relations: FOLDER_RELATIONS },
    { name: 'user', relations: null },
    { name: 'group', relations: null },
    { name: 'agent', relations: null },
  ]);
});

interface Window {
  notBefore?: number;
  expiresAt?: number;
}
const grant = (subject: string, relation: string, object: string, { notBefore, expiresAt }: Window = {}): WindowedGrant => ({
  subject: parseRef(subject, 'subject'),
  relation,
  object: parseRef(object, 'object'),
  notBefore: notBefore === undefined ? null : new Date(notBefore),
  expiresAt: expiresAt === undefined ? null : new Date(expiresAt),
});

/** A graph of these grants and agents; `reads` counts the grants it hands out. */
function graphOf(grants: WindowedGrant[], agents: Record<string, string[]> = {}) {
  const key = (ref: { ns: string; id: string }) => formatRef(ref);
  const counter = { reads: 0 };
  const out = (found: WindowedGrant[]) => ((counter.reads += found.length), found);
  const graph: ExplainGraph = {
    agentScope: async (id) => agents[id] ?? null,
    holdsAnyGrant: async (subject) => grants.some((g) => key(g.subject) === key(subject)),
    groupsOf: async (subject) => out(grants.filter((g) => key(g.subject) === key(subject) && g.relation === 'member')),
    heldBy: async (pairs, holders) => ({
      grants: out(
        grants.filter(
          (g) => pairs.some((p) => key(p.object) === key(g.object) && p.relation === g.relation) && holders.some((h) => key(h) === key(g.subject)),
        ),
      ),
      steps: 0,
    }),
    related: async (items, limit) =>
      out(grants.filter((g) => items.some((i) => key(i.object) === key(g.object) && i.via === g.relation)).slice(0, limit)),
    checkpoint: async () => undefined,
  };
  return { graph, counter };
}

const explain = (grants: WindowedGrant[], query: [string, string, string], { agents = {}, budget = 1000 } = {}) =>
  explainCheck(graphOf(grants, agents).graph, schema, grant(...query), budget, NOW);
const viewD1 = (subject = 'user:alice'): [string, string, string] => [subject, 'viewer', 'document:d1'];

describe('grantWindow', () => {
  it('counts a grant from not_before on and until expires_at, to the millisecond', () => {
    const window = (notBefore: number | null, expiresAt: number | null) => ({
      notBefore: notBefore === null ? null : new Date(notBefore),
      expiresAt: expiresAt === null ? null : new Date(expiresAt),
    });
    expect(grantWindow(window(null, null), NOW)).toBe('in-force');
    expect(grantWindow(window(NOW, null), NOW)).toBe('in-force');
    expect(grantWindow(window(NOW + 1, null), NOW)).toBe('not-yet-valid');
    expect(grantWindow(window(null, NOW + 1), NOW)).toBe('in-force');
    expect(grantWindow(window(null, NOW), NOW)).toBe('expired');
    expect(grantWindow(window(NOW - HOUR, NOW - 1), NOW)).toBe('expired');
  });
});

describe('explainCheck', () => {
  it('takes the shortest path of grants in force, over a shorter one outside its window', async () => {
    const result = await explain(
      [
        grant('user:alice', 'owner', 'document:d1', { expiresAt: NOW - HOUR }),
        grant('user:alice', 'member', 'group:eng'),
        grant('group:eng', 'viewer', 'folder:f1'),
        grant('folder:f1', 'parent', 'document:d1'),
      ],
      viewD1(),
    );
    expect(result).toEqual({
      allowed: true,
      reason: null,
      path: [
        { subject: 'user:alice', relation: 'member', object: 'group:eng', via: 'member' },
        { subject: 'group:eng', relation: 'viewer', object: 'folder:f1', via: 'direct' },
        { subject: 'folder:f1', relation: 'parent', object: 'document:d1', via: 'arrow:parent->viewer' },
      ],
    });
  });

  it("prefers the subject's own grant to a group's at the same level", async () => {
    const result = await explain(
      [grant('user:alice', 'member', 'group:eng'), grant('group:eng', 'viewer', 'document:d1'), grant('user:alice', 'editor', 'document:d1')],
      viewD1(),
    );
    expect(result.path).toEqual([{ subject: 'user:alice', relation: 'editor', object: 'document:d1', via: 'includes:editor' }]);
  });

  it('is not-yet-valid when only grants that have not started would confer it, expired when such a path holds an expired grant', async () => {
    const future = { notBefore: NOW + HOUR };
    const past = { expiresAt: NOW - 1 };
    expect(await explain([grant('user:alice', 'viewer', 'document:d1', future)], viewD1())).toEqual({
      allowed: false,
      path: [],
      reason: 'not-yet-valid',
    });
    expect(await explain([grant('user:alice', 'viewer', 'document:d1', past)], viewD1())).toEqual({ allowed: false, path: [], reason: 'expired' });
    // The membership has expired, the group's grant has not started: waiting would not open this path.
    const both = [grant('user:alice', 'member', 'group:eng', past), grant('group:eng', 'viewer', 'document:d1', future)];
    expect((await explain(both, viewD1())).reason).toBe('expired');
    // Two chains, one that waiting opens and one closed for good: not-yet-valid, in whichever order they are read.
    const two = [grant('user:alice', 'viewer', 'document:d1', past), grant('user:alice', 'editor', 'document:d1', future)];
    expect((await explain(two, viewD1())).reason).toBe('not-yet-valid');
    expect((await explain(two.reverse(), viewD1())).reason).toBe('not-yet-valid');
    // A grant out of its window that confers nothing here does not change no-path.
    expect((await explain([grant('user:alice', 'viewer', 'document:d2', past)], viewD1())).reason).toBe('no-path');
    // Nor does an expired membership of a group that confers nothing here.
    expect((await explain([grant('user:alice', 'member', 'group:eng', past), grant('group:eng', 'viewer', 'document:d2')], viewD1())).reason).toBe(
      'no-path',
    );
  });

  it('names the agent reasons: not registered before anything, scope only when a path exists', async () => {
    const grants = [grant('agent:bot', 'member', 'user:alice'), grant('user:alice', 'viewer', 'document:d1')];
    expect((await explain(grants, viewD1('agent:ghost'))).reason).toBe('agent-not-registered');
    expect((await explain(grants, viewD1('agent:bot'), { agents: { bot: ['folder:*'] } })).reason).toBe('agent-scope');
    expect((await explain(grants, ['agent:bot', 'owner', 'document:d1'], { agents: { bot: ['folder:*'] } })).reason).toBe('no-path');
    expect((await explain(grants, viewD1('agent:bot'), { agents: { bot: ['document:viewer'] } })).allowed).toBe(true);
  });

  it('is refused past its budget: the pairs of each level and the grants read through arrows, as a check counts them', async () => {
    // d1's viewer and editor and owner (3 pairs), then its 3 parents (3 grants read): 6 steps before the next level.
    const grants = [
      ...['f1', 'f2', 'f3'].map((f) => grant(`folder:${f}`, 'parent', 'document:d1')),
      grant('user:alice', 'viewer', 'folder:f3'),
      grant('user:alice', 'viewer', 'document:d9'),
    ];
    expect((await explain(grants, viewD1(), { budget: 6 })).allowed).toBe(true);
    await expect(explain(grants, viewD1(), { budget: 5 })).rejects.toMatchObject({ type: 'check-too-complex' });
    // Exactly the budget is within it: d1's 3 pairs, no parent to read, then no path.
    expect((await explain([grant('user:alice', 'viewer', 'document:d9')], viewD1(), { budget: 3 })).reason).toBe('no-path');
  });
});

describe('indexGraph', () => {
  const future = { notBefore: NOW + HOUR };
  const past = { expiresAt: NOW - 1 };
  const scenarios: WindowedGrant[][] = [
    [
      grant('user:alice', 'owner', 'document:d1', past),
      grant('user:alice', 'member', 'group:eng'),
      grant('group:eng', 'viewer', 'folder:f1'),
      grant('folder:f1', 'parent', 'document:d1'),
    ],
    [grant('user:alice', 'member', 'group:eng', future), grant('group:eng', 'editor', 'document:d1')],
    [grant('user:alice', 'member', 'group:eng', past), grant('group:eng', 'viewer', 'document:d1', future)],
    [grant('user:alice', 'viewer', 'folder:f1'), grant('folder:f1', 'parent', 'document:d1', future)],
    [grant('user:alice', 'viewer', 'folder:f1', past), grant('folder:f1', 'parent', 'document:d1'), grant('user:alice', 'viewer', 'document:d2')],
    [grant('agent:bot', 'member', 'group:eng'), grant('group:eng', 'viewer', 'document:d1', past), grant('user:bob', 'owner', 'document:d1')],
    [grant('agent:bot', 'viewer', 'document:d1', future)],
  ];
  const agents: Record<string, string[]> = { bot: ['document:viewer'] };
  const queries: [string, string, string][] = [
    viewD1(),
    ['user:alice', 'editor', 'document:d1'],
    viewD1('user:bob'),
    viewD1('group:eng'),
    viewD1('agent:bot'),
    viewD1('agent:ghost'),
    ['user:alice', 'viewer', 'document:d2'],
  ];

  it("explains from an index's grants and windows, at the instant it was advanced to, as from the grants themselves", async () => {
    for (const grants of scenarios) {
      const index = new GrantIndex();
      for (const g of grants) index.add(g, windowOf(g.notBefore?.getTime() ?? null, g.expiresAt?.getTime() ?? null));
      index.advance(NOW);
      for (const query of queries) {
        const fromIndex = await explainCheck(
          indexGraph(index, (id) => agents[id]),
          schema,
          grant(...query),
          1000,
          NOW,
        );
        expect({ grants: grants.length, query, explained: fromIndex }).toEqual({
          grants: grants.length,
          query,
          explained: await explain(grants, query, { agents }),
        });
      }
    }
  });
});

describe("an explanation from an index's grants, however wide", () => {
  const wide = () =>
    new CompiledSchema([
      { name: 'n2', relations: { parent: {}, r1: { includes: ['parent->r1'] } } },
      { name: 'user', relations: null },
      { name: 'team', relations: null },
    ]);
  const explainIn = (index: GrantIndex, query: ReturnType<typeof grant>, budget: number) =>
    explainCheck(
      indexGraph(index, () => undefined),
      wide(),
      query,
      budget,
      NOW,
    );
  /** A user in `width` groups, and an object with `width` parents, none of which a group holds r1 on. */
  function wideIndex(width: number): GrantIndex {
    const index = new GrantIndex();
    for (let i = 0; i < width; i++) {
      index.add(grant('user:u', 'member', `team:t${i}`));
      index.add(grant(`n2:p${i}`, 'parent', 'n2:o'));
    }
    return index;
  }

  it('matches a subject of many groups against each pair as the check does, reading the smaller side', async () => {
    const index = wideIndex(3_000);
    const query = grant('user:u', 'r1', 'n2:o');
    expect(index.check(wide(), query, 25_000)).toBe(false);
    const reads = vi.spyOn(EdgeLists.prototype, 'has');
    try {
      expect(await explainIn(index, query, 25_000)).toEqual({ allowed: false, path: [], reason: 'no-path' });
      // Not the 3,000 x 3,000 lookups of each holder on each pair: each pair's holders (none) are read instead.
      expect(reads.mock.calls.length).toBeLessThan(100);
    } finally {
      reads.mockRestore();
    }
    index.add(grant('team:t2999', 'r1', 'n2:p1234'));
    expect(await explainIn(index, query, 25_000)).toMatchObject({ allowed: true });
  });

  it('refuses what the check refuses, counting the same steps', async () => {
    const index = wideIndex(3_000);
    for (let i = 0; i < 3_000; i++) index.add(grant(`team:x${i}`, 'r1', `n2:p${i}`)); // each parent's one holder, matched against 3,001
    const query = grant('user:u', 'r1', 'n2:o');
    expect(() => index.check(wide(), query, 11_000)).toThrow(overBudget(11_000));
    await expect(explainIn(index, query, 11_000)).rejects.toThrow(overBudget(11_000));
    expect(index.check(wide(), query, 13_000)).toBe(false);
    expect(await explainIn(index, query, 13_000)).toMatchObject({ allowed: false });
  });

  it('gives way between pairs, and stops with IndexChanged when the grants changed meanwhile', async () => {
    const index = wideIndex(50);
    let ranMeanwhile = false;
    setImmediate(() => (ranMeanwhile = true));
    await explainCheck(
      indexGraph(index, () => undefined, WorkMeter.unmetered(0)),
      wide(),
      grant('user:u', 'r1', 'n2:o'),
      25_000,
      NOW,
    );
    expect(ranMeanwhile).toBe(true);
    setImmediate(() => index.add(grant('user:u', 'r1', 'n2:p7')));
    await expect(
      explainCheck(
        indexGraph(index, () => undefined, WorkMeter.unmetered(0)),
        wide(),
        grant('user:u', 'r1', 'n2:o'),
        25_000,
        NOW,
      ),
    ).rejects.toBeInstanceOf(IndexChanged);
  });
});
