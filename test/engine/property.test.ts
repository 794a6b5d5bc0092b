import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { inForce } from '../../src/engine/grant-window.ts';
import type { RelationDefinitions } from '../../src/engine/schema.ts';
import { useServices } from '../helpers.ts';
import { assertProperty } from '../properties.ts';
import {
  DECLARED,
  grantWithWindows,
  IDS,
  OBJECTS,
  reference,
  REFS,
  SUBJECT_NAMESPACES,
  tenantArbOf,
  writeTenant,
  type TenantModel,
  validGrants,
  WINDOW_INSTANTS,
  windowBoundsArb,
} from './random-tenants.ts';
import { disagreeing, queriesOn, relationsArb, type Triple } from './reference.ts';

/**
 * Random small tenants, answered by the engine and by a reference evaluator written straight from
 * docs/model.md#what-a-check-means; they must agree on every check and every listing. Checks are
 * answered three ways: from the database, from grants held in memory since before the writes
 * (kept current from the grant log), and from grants loaded into memory after them; listings
 * walk the grants in memory and in the database. With time-bound grants, at each instant, the
 * reference is asked of the grants in force then.
 */
const services = useServices();
const databaseOnly = useServices({ graphMemory: 0 });
const loadedLater = useServices();

const RELATIONS = ['r0', 'r1', 'r2', 'parent', 'member'];

/** Any grant, or (a third of the time) a membership of a team, so that paths through groups are common. */
const tripleArb: fc.Arbitrary<Triple> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom(...REFS), fc.constantFrom(...RELATIONS), fc.constantFrom(...REFS.filter((r) => !r.startsWith('agent:')))),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constantFrom(...REFS.filter((r) => /^(user|agent|folder):/.test(r))),
      fc.constant('member'),
      fc.constantFrom(...REFS.filter((r) => r.startsWith('team:'))),
    ),
  },
);

const tenantArb = tenantArbOf(relationsArb, tripleArb);

/**
 * The fewest grants that confer (subject, rel, obj) in the graph, agent scopes aside (Infinity: none
 * do): straight from docs/model.md#what-a-check-means, a grant per arrow followed, one for the
 * grant held at the end, and one for the membership of a group.
 */
function referenceShortest(model: TenantModel) {
  const defs: Record<string, RelationDefinitions> = { doc: model.doc, folder: model.folder };
  const grants = validGrants(model);
  const has = new Set(grants.map((t) => t.join(' ')));
  const fewest = (s: string, rel: string, obj: string, depth: number, memo: Map<string, number>): number => {
    const key = `${s} ${rel} ${obj} ${depth}`;
    if (memo.has(key)) return memo.get(key)!;
    let best = has.has(`${s} ${rel} ${obj}`) ? 1 : Infinity;
    for (const entry of defs[obj.split(':')[0]!]?.[rel]?.includes ?? []) {
      const [via, target] = entry.includes('->') ? entry.split('->') : [null, entry];
      if (via === null) best = Math.min(best, fewest(s, target, obj, depth, memo));
      else if (depth < 16) {
        for (const [x, r, o] of grants) if (r === via && o === obj) best = Math.min(best, 1 + fewest(s, target, x, depth + 1, memo));
      }
    }
    memo.set(key, best);
    return best;
  };
  return (subject: string, rel: string, obj: string): number => {
    const memo = new Map<string, number>();
    const groups = grants.filter(([s, r]) => s === subject && r === 'member').map(([, , o]) => o);
    return Math.min(fewest(subject, rel, obj, 0, memo), ...groups.map((g) => 1 + fewest(g, rel, obj, 0, memo)));
  };
}

/** A tenant of the given model, written while `services` holds it in memory. */
const tenantOf = (model: TenantModel) => writeTenant(services, model);

describe('engine against the reference evaluator', () => {
  it('agrees on every check and every listing of random tenants', async () => {
    await assertProperty(
      fc.asyncProperty(tenantArb, async (model) => {
        const { g, grants } = await tenantOf(model);
        const expected = reference(model);
        const queries = queriesOn(
          REFS,
          REFS.filter((r) => DECLARED.some((ns) => r.startsWith(`${ns}:`))),
        );
        expect(await loadedLater.heldTenants.load(g.tenantId)).toBe(true);
        expect(await disagreeing(services.engine, g.tenantId, queries, expected)).toEqual([]);
        expect(await disagreeing(databaseOnly.engine, g.tenantId, queries, expected)).toEqual([]);
        expect(await disagreeing(loadedLater.engine, g.tenantId, queries, expected)).toEqual([]);

        for (const subject of ['user:u0', 'team:t0', 'agent:a0', 'agent:a1', 'folder:f0']) {
          for (const ns of DECLARED) {
            for (const rel of ['r1', 'r2']) {
              const want = IDS[ns]!.filter((id) => expected(subject, rel, `${ns}:${id}`)).sort();
              expect(await g.listAll(subject, ns, rel, 2)).toEqual(want);
              expect(await g.listAll(subject, ns, rel, 2, { via: 'scan' })).toEqual(want);
              expect(await g.listAll(subject, ns, rel, 2, { via: 'sample' })).toEqual(want);
              // The same walks in the database (the services above walk the grants in memory).
              expect(await g.listAll(subject, ns, rel, 2, { on: databaseOnly })).toEqual(want);
              expect(await g.listAll(subject, ns, rel, 2, { via: 'sample', on: databaseOnly })).toEqual(want);
            }
          }
        }

        // Every other grant revoked: the graph in memory drops them from the log.
        const revoked = grants.filter((_, i) => i % 2 === 0);
        if (revoked.length > 0) await g.revoke(...revoked);
        databaseOnly.engine.invalidate(g.tenantId); // as a node that made the write would
        const afterRevoke = reference({ ...model, grants: model.grants.filter((t) => !revoked.includes(t)) });
        expect(await disagreeing(services.engine, g.tenantId, queries, afterRevoke)).toEqual([]);
        expect(await disagreeing(databaseOnly.engine, g.tenantId, queries, afterRevoke)).toEqual([]);
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});

describe('subjects and explanations against the reference evaluator', () => {
  it('lists exactly the subjects a check allows, and explains every check with a shortest path that alone confers it', async () => {
    await assertProperty(
      fc.asyncProperty(tenantArb, async (model) => {
        const { g, grants } = await tenantOf(model);
        const expected = reference(model);
        const shortest = referenceShortest(model);
        const registered = model.a1Registered ? ['a0', 'a1'] : ['a0'];
        const held = new Set(grants.map((t) => t.join(' ')));

        for (const object of OBJECTS) {
          for (const rel of ['r1', 'r2']) {
            for (const ns of SUBJECT_NAMESPACES) {
              const want = IDS[ns]!.filter((id) => expected(`${ns}:${id}`, rel, object)).sort();
              expect(await g.subjectsAll(object, rel, ns, 2)).toEqual(want);
              expect(await g.subjectsAll(object, rel, ns, 2, { via: 'scan' })).toEqual(want);
              expect(await g.subjectsAll(object, rel, ns, 2, { via: 'sample' })).toEqual(want);
              expect(await g.subjectsAll(object, rel, ns, 2, { on: databaseOnly })).toEqual(want);
              expect(await g.subjectsAll(object, rel, ns, 2, { via: 'sample', on: databaseOnly })).toEqual(want);
            }
          }
        }

        for (const [subject, rel, object] of queriesOn(['user:u0', 'team:t0', 'agent:a0', 'agent:a1'], OBJECTS)) {
          const allowed = expected(subject, rel, object);
          const agent = subject.startsWith('agent:') ? subject.slice('agent:'.length) : null;
          const reason = allowed
            ? null
            : agent !== null && !registered.includes(agent)
              ? 'agent-not-registered'
              : shortest(subject, rel, object) < Infinity
                ? 'agent-scope'
                : 'no-path';
          for (const on of [services, databaseOnly]) {
            const explained = await g.explain(subject, rel, object, on);
            expect({ allowed: explained.allowed, reason: explained.reason }).toEqual({ allowed, reason });
            const path = explained.path.map((step): Triple => [step.subject, step.relation, step.object]);
            expect(path.every((t) => held.has(t.join(' ')))).toBe(true);
            // A shortest path when allowed, none when denied (an agent out of scope may have one).
            expect(path.length).toBe(allowed ? shortest(subject, rel, object) : 0);
            // An allowed check's path, from the subject to the object, confers it alone (with the schema and
            // agents); a denied check has none.
            expect(reference({ ...model, grants: path })(subject, rel, object)).toBe(allowed);
            expect([explained.path[0]?.subject, explained.path.at(-1)?.object]).toEqual(allowed ? [subject, object] : [undefined, undefined]);
          }
        }
      }),
      { numRuns: 25 },
    );
  }, 180_000);
});

describe('engine against the reference evaluator with time-bound grants', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const windowedArb = fc.record({ tenant: tenantArb, bounds: windowBoundsArb });

  it('agrees at every instant, in memory and in the database, while windows open and close during the test', async () => {
    await assertProperty(
      fc.asyncProperty(windowedArb, async ({ tenant: model, bounds }) => {
        const T = Math.ceil(Date.now() / 1000) * 1000 + 10_000;
        vi.useFakeTimers({ toFake: ['Date'], now: T });
        const { g } = await tenantOf({ ...model, grants: [] });
        const grants = await grantWithWindows(services, g.tenantId, model, bounds, T);
        expect(await loadedLater.heldTenants.load(g.tenantId)).toBe(true);
        const queries = queriesOn(
          ['user:u0', 'user:u1', 'team:t0', 'agent:a0', 'folder:f0'],
          REFS.filter((r) => DECLARED.some((ns) => r.startsWith(`${ns}:`))),
        );
        for (const ms of WINDOW_INSTANTS) {
          vi.setSystemTime(T + ms);
          const expected = reference({ ...model, grants: grants.filter(({ window }) => inForce(window, T + ms)).map(({ triple }) => triple) });
          for (const engine of [services.engine, databaseOnly.engine, loadedLater.engine]) {
            expect(await disagreeing(engine, g.tenantId, queries, expected)).toEqual([]);
          }
          for (const subject of ['user:u0', 'team:t0']) {
            const want = IDS.doc!.filter((id) => expected(subject, 'r2', `doc:${id}`)).sort();
            expect(await g.listAll(subject, 'doc', 'r2', 2)).toEqual(want);
            expect(await g.listAll(subject, 'doc', 'r2', 2, { on: databaseOnly })).toEqual(want);
          }
          // The subjects listing too: the walk from the object sees only the grants in force, in memory and in the database.
          for (const object of OBJECTS) {
            for (const ns of SUBJECT_NAMESPACES) {
              const want = IDS[ns]!.filter((id) => expected(`${ns}:${id}`, 'r2', object)).sort();
              for (const on of [services, loadedLater, databaseOnly]) expect(await g.subjectsAll(object, 'r2', ns, 2, { on })).toEqual(want);
            }
          }
          // Explain names the same reason in memory as in the database: every check that some grants,
          // in their window or not, would confer (the others are no-path), and one that none would.
          const inForceNow = grants.filter(({ window }) => inForce(window, T + ms)).map(({ triple }) => triple);
          const [shortestNow, shortestEver] = [referenceShortest({ ...model, grants: inForceNow }), referenceShortest(model)];
          const explained = queries.filter((q) => shortestEver(...q) < Infinity);
          for (const [subject, rel, object] of [...explained, ['user:u2', 'r0', 'doc:d2'] as Triple]) {
            const allowed = expected(subject, rel, object);
            const reason = allowed
              ? null
              : shortestNow(subject, rel, object) < Infinity
                ? 'agent-scope'
                : shortestEver(subject, rel, object) < Infinity
                  ? 'in time'
                  : 'no-path';
            const reasons = [];
            for (const on of [services, loadedLater, databaseOnly]) {
              const explanation = await g.explain(subject, rel, object, on);
              expect(explanation.allowed).toBe(allowed);
              expect(reason === 'in time' ? ['expired', 'not-yet-valid'] : [reason]).toContain(explanation.reason);
              reasons.push(explanation.reason);
              // A path is made of grants in force now, which alone confer an allowed check and not a denied one.
              const path = explanation.path.map((step): Triple => [step.subject, step.relation, step.object]);
              expect(path.every((t) => inForceNow.some((n) => n.join(' ') === t.join(' ')))).toBe(true);
              expect(reference({ ...model, grants: path })(subject, rel, object)).toBe(allowed);
            }
            expect(new Set(reasons).size, `${subject} ${rel} ${object} at +${ms} ms: ${reasons.join(', ')}`).toBe(1);
          }
        }
      }),
      { numRuns: 15 },
    );
  }, 180_000);
});

describe('engine against the reference evaluator on long and dense graphs', () => {
  const arrowsTo = (...targets: string[]) => targets.map((t) => `parent->${t}`);
  const base = { scopes: [[], []] as [string[], string[]], a1Registered: false };

  it('agrees past 16 arrows in a chain, with a shortcut that a walk must count at its fewest arrows', async () => {
    const folders = Array.from({ length: 20 }, (_, k) => `folder:c${k}`);
    const chain = folders.slice(1).map((f, k): Triple => [folders[k]!, 'parent', f]);
    const relations = { parent: {}, member: {}, r0: {}, r1: { includes: arrowsTo('r1') }, r2: { includes: ['r1', ...arrowsTo('r2')] } };
    const model: TenantModel = {
      ...base,
      doc: relations,
      folder: relations,
      grants: [
        ...chain,
        ['folder:c19', 'parent', 'doc:d0'],
        ['folder:c3', 'parent', 'folder:c6'], // two arrows shorter: c0 reaches c18 in 16, c19 in 17
        ['user:u0', 'r1', 'folder:c0'],
        ['user:u1', 'r2', 'folder:c1'],
        ['user:u2', 'member', 'team:t0'],
        ['team:t0', 'r1', 'folder:c2'],
      ],
    };
    const { g } = await tenantOf(model);
    const queries = queriesOn(['user:u0', 'user:u1', 'user:u2', 'team:t0'], [...folders, 'doc:d0']);
    expect(await loadedLater.heldTenants.load(g.tenantId)).toBe(true);
    const expected = reference(model);
    expect(['folder:c18', 'folder:c19', 'doc:d0'].map((o) => expected('user:u0', 'r1', o))).toEqual([true, false, false]);
    for (const engine of [services.engine, databaseOnly.engine, loadedLater.engine]) {
      expect(await disagreeing(engine, g.tenantId, queries, expected)).toEqual([]);
    }
  });

  it('agrees on a dense cycle, where every folder is the parent of every other', async () => {
    const folders = Array.from({ length: 12 }, (_, k) => `folder:k${k}`);
    const relations = { parent: {}, member: {}, r0: {}, r1: { includes: arrowsTo('r1', 'r2') }, r2: { includes: arrowsTo('r1', 'r2') } };
    const model: TenantModel = {
      ...base,
      doc: relations,
      folder: relations,
      grants: [
        ...folders.flatMap((a) => folders.filter((b) => b !== a).map((b): Triple => [a, 'parent', b])),
        ['folder:k3', 'parent', 'doc:d0'],
        ['user:u0', 'r2', 'folder:k5'],
        ['user:u1', 'r0', 'folder:k5'],
      ],
    };
    const { g } = await tenantOf(model);
    const queries = queriesOn(['user:u0', 'user:u1', 'user:u2'], [...folders, 'doc:d0']);
    expect(await loadedLater.heldTenants.load(g.tenantId)).toBe(true);
    const expected = reference(model);
    expect(expected('user:u0', 'r1', 'doc:d0')).toBe(true);
    for (const engine of [services.engine, databaseOnly.engine, loadedLater.engine]) {
      expect(await disagreeing(engine, g.tenantId, queries, expected)).toEqual([]);
    }
  });
});
