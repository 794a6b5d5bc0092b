import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AuthorizationEngine } from '../../src/engine/engine.ts';
import type { RelationDefinitions } from '../../src/engine/schema.ts';
import { useServices } from '../helpers.ts';
import { tenantGraph } from './fixtures.ts';

/**
 * Random small tenants, answered by the engine and by a reference evaluator written straight from
 * API.md's definition of check; they must agree on every check and every listing. Checks are
 * answered three ways: from the database, from grants held in memory since before the writes
 * (kept current from the grant log), and from grants loaded into memory after them; listings
 * walk the grants in memory and in the database.
 */
const services = useServices();
const databaseOnly = useServices({ graphMemory: 0 });
const loadedLater = useServices();

type Triple = [subject: string, relation: string, object: string];
const RELATIONS = ['r0', 'r1', 'r2', 'parent', 'member'];
const DECLARED = ['doc', 'folder'];
const IDS: Record<string, string[]> = {
  user: ['u0', 'u1', 'u2'],
  agent: ['a0', 'a1'],
  team: ['t0', 't1'],
  folder: ['f0', 'f1', 'f2'],
  doc: ['d0', 'd1', 'd2'],
};
const REFS = Object.entries(IDS).flatMap(([ns, ids]) => ids.map((id) => `${ns}:${id}`));
const SCOPES = ['doc:*', '*:r1', 'folder:r0', '*:*', 'check:read', 'doc:r2', 'team:member', 'user:member'];

/** Relations r0..r2 may include lower-numbered ones (no cycles) and arrows parent->rX. */
const relationsArb: fc.Arbitrary<RelationDefinitions> = fc
  .tuple(
    fc.subarray(['r0']),
    fc.subarray(['r0', 'r1']),
    fc.subarray(['parent->r0', 'parent->r1', 'parent->r2']),
    fc.subarray(['parent->r0', 'parent->r1', 'parent->r2']),
  )
  .map(([r1same, r2same, r1arrows, r2arrows]) => ({
    parent: {},
    member: {},
    r0: {},
    r1: { includes: [...r1same, ...r1arrows] },
    r2: { includes: [...r2same, ...r2arrows] },
  }));

const tripleArb: fc.Arbitrary<Triple> = fc.tuple(
  fc.constantFrom(...REFS),
  fc.constantFrom(...RELATIONS),
  fc.constantFrom(...REFS.filter((r) => !r.startsWith('agent:'))),
);

const tenantArb = fc.record({
  doc: relationsArb,
  folder: relationsArb,
  grants: fc.uniqueArray(tripleArb, { maxLength: 40, selector: (t) => t.join(' ') }),
  scopes: fc.tuple(fc.subarray(SCOPES), fc.subarray(SCOPES)),
  a1Registered: fc.boolean(),
});
type TenantModel = typeof tenantArb extends fc.Arbitrary<infer T> ? T : never;

function reference(model: TenantModel) {
  const defs: Record<string, RelationDefinitions> = { doc: model.doc, folder: model.folder };
  const grants = validGrants(model);
  const has = new Set(grants.map((t) => t.join(' ')));
  const scopes = new Map<string, string[]>([['a0', model.scopes[0]]]);
  if (model.a1Registered) scopes.set('a1', model.scopes[1]);

  const holds = (s: string, rel: string, obj: string, depth: number, memo: Map<string, boolean>): boolean => {
    const key = `${s} ${rel} ${obj} ${depth}`;
    if (memo.has(key)) return memo.get(key)!;
    memo.set(key, false);
    let result = has.has(`${s} ${rel} ${obj}`);
    const includes = defs[obj.split(':')[0]!]?.[rel]?.includes ?? [];
    for (const entry of includes) {
      if (result) break;
      const [via, target] = entry.includes('->') ? entry.split('->') : [null, entry];
      if (via === null) result = holds(s, target!, obj, depth, memo);
      else if (depth < 16) {
        result = grants.some(([x, r, o]) => r === via && o === obj && holds(s, target!, x, depth + 1, memo));
      }
    }
    memo.set(key, result);
    return result;
  };

  return (subject: string, rel: string, obj: string): boolean => {
    const [sns, sid] = subject.split(':') as [string, string];
    if (sns === 'agent') {
      const scope = scopes.get(sid);
      const [ons] = obj.split(':') as [string];
      const covered = scope?.some((e) => {
        const [a, b] = e.split(':');
        return (a === '*' || a === ons) && (b === '*' || b === rel);
      });
      if (!covered) return false;
    }
    const groups = grants.filter(([s, r]) => s === subject && r === 'member').map(([, , o]) => o);
    const memo = new Map<string, boolean>();
    return [subject, ...groups].some((s) => holds(s, rel, obj, 0, memo));
  };
}

/** The generated grants the service accepts: declared relations only, agents registered. */
function validGrants(model: TenantModel): Triple[] {
  const defs: Record<string, RelationDefinitions> = { doc: model.doc, folder: model.folder };
  const registered = new Set(model.a1Registered ? ['a0', 'a1'] : ['a0']);
  return model.grants.filter(([s, r, o]) => {
    const ons = o.split(':')[0]!;
    if (DECLARED.includes(ons) && !Object.hasOwn(defs[ons]!, r)) return false;
    return !s.startsWith('agent:') || registered.has(s.slice('agent:'.length));
  });
}

describe('engine against the reference evaluator', () => {
  it('agrees on every check and every listing of random tenants', async () => {
    await fc.assert(
      fc.asyncProperty(tenantArb, async (model) => {
        const g = await tenantGraph(services);
        expect(await services.graphs.load(g.tenantId)).toBe(true);
        await g.namespace('doc', model.doc);
        await g.namespace('folder', model.folder);
        await g.namespace('team');
        await g.agent('a0', model.scopes[0]);
        if (model.a1Registered) await g.agent('a1', model.scopes[1]);
        const grants = validGrants(model);
        if (grants.length > 0) await g.grant(...grants);

        const expected = reference(model);
        const queries: Triple[] = [];
        for (const subject of REFS) {
          for (const obj of REFS.filter((r) => DECLARED.some((ns) => r.startsWith(`${ns}:`)))) {
            for (const rel of ['r0', 'r1', 'r2']) queries.push([subject, rel, obj]);
          }
        }
        const asTriples = queries.map(([subject, relation, object]) => ({ subject, relation, object }));
        const disagreeing = async (engine: AuthorizationEngine, want: (...q: Triple) => boolean) => {
          const results = await engine.checkBulk(g.tenantId, asTriples);
          return queries.filter((q, i) => results[i]!.allowed !== want(...q));
        };
        expect(await loadedLater.graphs.load(g.tenantId)).toBe(true);
        expect(await disagreeing(services.engine, expected)).toEqual([]);
        expect(await disagreeing(databaseOnly.engine, expected)).toEqual([]);
        expect(await disagreeing(loadedLater.engine, expected)).toEqual([]);

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
        expect(await disagreeing(services.engine, afterRevoke)).toEqual([]);
        expect(await disagreeing(databaseOnly.engine, afterRevoke)).toEqual([]);
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
