import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AuthorizationEngine } from '../../src/engine/engine.ts';
import { inForce } from '../../src/engine/grant-window.ts';
import type { RelationDefinition, RelationDefinitions } from '../../src/engine/schema.ts';
import type { AppDeps } from '../../src/http/context.ts';
import { useServices } from '../helpers.ts';
import { assertProperty } from '../properties.ts';
import {
  DECLARED,
  grantWithWindows,
  IDS,
  OBJECTS,
  reference,
  REFS,
  registeredAgents,
  SUBJECT_NAMESPACES,
  tenantArbOf,
  WINDOW_INSTANTS,
  windowBoundsArb,
  writeTenant,
} from './random-tenants.ts';
import { disagreeing, queriesOn, type Triple } from './reference.ts';

/**
 * Random small tenants whose relations require and exclude others and whose grants are made to every
 * subject of a namespace (`user:*`, `team:*`, `agent:*`, `folder:*`, and memberships such as
 * `(user:*, member, team:t0)`), answered by the engine and by the reference evaluator
 * (reference.ts, docs/model.md#what-a-check-means): every check, bulk and single, from the database,
 * from grants held in memory since before the writes and from grants loaded after them; every
 * listing of objects and of subjects; and, with time-bound grants, all of it at each instant.
 */
const services = useServices();
const databaseOnly = useServices({ graphMemory: 0 });
const loadedLater = useServices();

const RULED = ['r0', 'r1', 'r2', 'r3'];
/**
 * What a definition of rN may reference: `member` (plain) and the relations below rN, on the same
 * object or through `parent`. Every reference goes to a lower-numbered relation, so the model has no
 * cycle at all, and none through an exclusion (which the service refuses).
 */
const referencesOf = (n: number) => ['member', 'parent->member', ...RULED.slice(0, n).flatMap((r) => [r, `parent->${r}`])];
const definitionArb = (n: number): fc.Arbitrary<RelationDefinition> =>
  fc
    .record({
      includes: fc.subarray(referencesOf(n), { maxLength: 2 }),
      requires: fc.subarray(referencesOf(n), { maxLength: 1 }),
      excludes: fc.subarray(referencesOf(n), { maxLength: 1 }),
    })
    .map((lists) => Object.fromEntries(Object.entries(lists).filter(([, list]) => list.length > 0)));
const rulesArb: fc.Arbitrary<RelationDefinitions> = fc
  .tuple(...RULED.map((_, n) => definitionArb(n)))
  .map((definitions) => ({ parent: {}, member: {}, ...Object.fromEntries(RULED.map((r, n) => [r, definitions[n]!])) }));

/** Every subject of a namespace: the grants' wildcard subjects, and the checks'. */
const EVERY = ['user:*', 'team:*', 'agent:*', 'folder:*'];
const RELATIONS = [...RULED, 'parent', 'member'];
const GRANTED = REFS.filter((r) => !r.startsWith('agent:'));

/** Any grant, a grant to a wildcard, or a membership of a team (of a wildcard too), so that paths through groups are common. */
const tripleArb: fc.Arbitrary<Triple> = fc.oneof(
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...REFS), fc.constantFrom(...RELATIONS), fc.constantFrom(...GRANTED)) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...EVERY), fc.constantFrom(...RELATIONS), fc.constantFrom(...GRANTED)) },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constantFrom(...REFS.filter((r) => /^(user|agent|folder):/.test(r)), 'user:*', 'agent:*'),
      fc.constant('member'),
      fc.constantFrom(...IDS.team!.map((id) => `team:${id}`)),
    ),
  },
);

const tenantArb = tenantArbOf(rulesArb, tripleArb);
const QUERIES = queriesOn([...REFS, ...EVERY], OBJECTS, RULED);

/** The checks on which `engine` and the reference disagree, each with the reference's answer. */
async function wrongAnswers(engine: AuthorizationEngine, tenantId: string, queries: readonly Triple[], want: (...q: Triple) => boolean) {
  return (await disagreeing(engine, tenantId, queries, want)).map((q) => `${q.join(' ')} (reference: ${want(...q)})`);
}

/** The ids of `ns` named as the subject of one of `grants`, and for agents the registered ones. */
function namedSubjects(ns: string, grants: readonly Triple[], agents: readonly string[]): Set<string> {
  const named = grants.map(([s]) => s).filter((s) => s.startsWith(`${ns}:`) && s !== `${ns}:*`);
  return new Set([...named.map((s) => s.slice(ns.length + 1)), ...(ns === 'agent' ? agents : [])]);
}

/** The subjects listing the reference expects: the named subjects it allows, and `*` when `ns:*` is allowed (sorting first). */
function expectedSubjects(want: (...q: Triple) => boolean, object: string, rel: string, ns: string, named: Set<string>): string[] {
  const ids = [...named].filter((id) => want(`${ns}:${id}`, rel, object));
  return [...(want(`${ns}:*`, rel, object) ? ['*'] : []), ...ids].sort();
}

describe('engine against the reference evaluator, with requires, excludes and public grants', () => {
  it('agrees on every check of random tenants, in memory and in the database, before and after revocations', async () => {
    await assertProperty(
      fc.asyncProperty(tenantArb, async (model) => {
        const { g, grants } = await writeTenant(services, model);
        const expected = reference(model);
        expect(await loadedLater.heldTenants.load(g.tenantId)).toBe(true);
        for (const [name, on] of Object.entries({ services, databaseOnly, loadedLater })) {
          expect(await wrongAnswers(on.engine, g.tenantId, QUERIES, expected), name).toEqual([]);
        }

        // Every other grant revoked: the graph in memory drops them from the log.
        const revoked = grants.filter((_, i) => i % 2 === 0);
        if (revoked.length > 0) await g.revoke(...revoked);
        databaseOnly.engine.invalidate(g.tenantId); // as a node that made the write would
        const afterRevoke = reference({ ...model, grants: model.grants.filter((t) => !revoked.includes(t)) });
        for (const [name, on] of Object.entries({ services, databaseOnly })) {
          expect(await wrongAnswers(on.engine, g.tenantId, QUERIES, afterRevoke), `${name} after revoking`).toEqual([]);
        }
      }),
      { numRuns: 40 },
    );
  }, 180_000);

  it('lists exactly the objects and the subjects a check allows, `*` among the subjects when every subject of the namespace is', async () => {
    await assertProperty(
      fc.asyncProperty(tenantArb, async (model) => {
        const { g, grants } = await writeTenant(services, model);
        const expected = reference(model);
        const ways: [string, { via?: 'walk' | 'scan' | 'sample'; on?: AppDeps }][] = [
          ['walk', {}],
          ['scan', { via: 'scan' }],
          ['sample', { via: 'sample' }],
          ['walk in the database', { on: databaseOnly }],
          ['sample in the database', { via: 'sample', on: databaseOnly }],
        ];
        for (const subject of ['user:u0', 'user:*', 'team:t0', 'agent:a0', 'agent:a1', 'folder:f0']) {
          for (const ns of DECLARED) {
            for (const rel of ['r1', 'r2', 'r3']) {
              const want = IDS[ns]!.filter((id) => expected(subject, rel, `${ns}:${id}`)).sort();
              for (const [way, options] of ways) {
                expect(await g.listAll(subject, ns, rel, 2, options), `objects ${subject} ${rel} ${ns} (${way})`).toEqual(want);
              }
            }
          }
        }
        for (const object of OBJECTS) {
          for (const rel of ['r1', 'r2', 'r3']) {
            for (const ns of SUBJECT_NAMESPACES) {
              const want = expectedSubjects(expected, object, rel, ns, namedSubjects(ns, grants, registeredAgents(model)));
              for (const [way, options] of ways) {
                expect(await g.subjectsAll(object, rel, ns, 2, options), `subjects ${ns} ${rel} ${object} (${way})`).toEqual(want);
              }
            }
          }
        }
      }),
      { numRuns: 25 },
    );
  }, 300_000);
});

describe('engine against the reference evaluator, with requires, excludes, public grants and time-bound grants', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const windowedArb = fc.record({ tenant: tenantArb, bounds: windowBoundsArb });

  it('agrees at every instant on checks and listings, in memory and in the database, while windows open and close', async () => {
    await assertProperty(
      fc.asyncProperty(windowedArb, async ({ tenant: model, bounds }) => {
        const T = Math.ceil(Date.now() / 1000) * 1000 + 10_000;
        vi.useFakeTimers({ toFake: ['Date'], now: T });
        const { g } = await writeTenant(services, { ...model, grants: [] });
        const grants = await grantWithWindows(services, g.tenantId, model, bounds, T);
        expect(await loadedLater.heldTenants.load(g.tenantId)).toBe(true);
        const queries = queriesOn(['user:u0', 'user:u1', 'user:*', 'team:t0', 'team:*', 'agent:a0', 'folder:f0'], OBJECTS, RULED);
        const agents = registeredAgents(model);
        const everGranted = grants.map(({ triple }) => triple);
        for (const ms of WINDOW_INSTANTS) {
          vi.setSystemTime(T + ms);
          const inForceNow = grants.filter(({ window }) => inForce(window, T + ms)).map(({ triple }) => triple);
          const expected = reference({ ...model, grants: inForceNow });
          for (const [name, on] of Object.entries({ services, databaseOnly, loadedLater })) {
            expect(await wrongAnswers(on.engine, g.tenantId, queries, expected), `${name} at +${ms} ms`).toEqual([]);
          }
          for (const subject of ['user:u0', 'user:*', 'team:t0']) {
            const want = IDS.doc!.filter((id) => expected(subject, 'r3', `doc:${id}`)).sort();
            for (const on of [services, databaseOnly]) expect(await g.listAll(subject, 'doc', 'r3', 2, { on })).toEqual(want);
          }
          // Subjects named only by grants out of their window may or may not be listed (the listing names
          // the subjects of the tenant's grants): those named by grants in force must be, and no others.
          for (const object of OBJECTS) {
            for (const ns of SUBJECT_NAMESPACES) {
              const atLeast = expectedSubjects(expected, object, 'r3', ns, namedSubjects(ns, inForceNow, agents));
              const atMost = expectedSubjects(expected, object, 'r3', ns, namedSubjects(ns, everGranted, agents));
              for (const on of [services, loadedLater, databaseOnly]) {
                const listed = await g.subjectsAll(object, 'r3', ns, 2, { on });
                const where = `subjects ${ns} r3 ${object} at +${ms} ms: ${listed.join(' ')}`;
                expect(
                  atLeast.filter((id) => !listed.includes(id)),
                  where,
                ).toEqual([]);
                expect(
                  listed.filter((id) => !atMost.includes(id)),
                  where,
                ).toEqual([]);
                expect(listed, where).toEqual([...listed].sort());
              }
            }
          }
        }
      }),
      // Shrinking a failure runs every instant of each smaller tenant: stopped in time, it still reports the smallest found.
      { numRuns: 15, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: true },
    );
  }, 300_000);
});
