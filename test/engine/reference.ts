import fc from 'fast-check';
import type { AuthorizationEngine } from '../../src/engine/engine.ts';
import type { RelationDefinitions } from '../../src/engine/schema.ts';

/**
 * The reference evaluator, written straight from docs/model.md#what-a-check-means, which the
 * property tests (property.test.ts) and the stateful model test (test/store/stateful-model.test.ts)
 * hold every engine to, and the small world of definitions and agent scopes both draw from.
 */

export type Triple = [subject: string, relation: string, object: string];

/** Scope entries of agents: some cover a namespace, some a relation, one nothing (an API key's scope). */
export const SCOPES = ['doc:*', '*:r1', 'folder:r0', '*:*', 'check:read', 'doc:r2', 'team:member', 'user:member'];

/** Relations r0..r2 may include lower-numbered ones (no cycles) and arrows parent->rX. */
export const relationsArb: fc.Arbitrary<RelationDefinitions> = fc
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

/** A tenant as the reference reads it, at one instant. */
export interface ReferenceTenant {
  /** The relations of each declared namespace (an open one, null or absent, includes nothing). */
  definitions: Readonly<Record<string, RelationDefinitions | null>>;
  /** The grants in force. */
  grants: readonly Triple[];
  /** The scope of each registered agent, by external id. */
  scopes: ReadonlyMap<string, readonly string[]>;
}

/** The answer of every check on the tenant, by the rules of docs/model.md#what-a-check-means. */
export function referenceCheck({ definitions, grants, scopes }: ReferenceTenant): (...query: Triple) => boolean {
  const has = new Set(grants.map((t) => t.join(' ')));

  const holds = (s: string, rel: string, obj: string, depth: number, memo: Map<string, boolean>): boolean => {
    const key = `${s} ${rel} ${obj} ${depth}`;
    if (memo.has(key)) return memo.get(key)!;
    memo.set(key, false);
    let result = has.has(`${s} ${rel} ${obj}`);
    const includes = definitions[obj.split(':')[0]!]?.[rel]?.includes ?? [];
    for (const entry of includes) {
      if (result) break;
      const [via, target] = entry.includes('->') ? entry.split('->') : [null, entry];
      if (via === null) result = holds(s, target, obj, depth, memo);
      else if (depth < 16) {
        result = grants.some(([x, r, o]) => r === via && o === obj && holds(s, target, x, depth + 1, memo));
      }
    }
    memo.set(key, result);
    return result;
  };

  return (subject, rel, obj) => {
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

/** Checks of every subject in `subjects` on every object in `objects`, for r0..r2. */
export function queriesOn(subjects: readonly string[], objects: readonly string[]): Triple[] {
  return subjects.flatMap((subject) => objects.flatMap((obj) => ['r0', 'r1', 'r2'].map((rel): Triple => [subject, rel, obj])));
}

/**
 * The checks among `queries` on which the engine and `want` disagree: in a bulk, and one by one too
 * where the tenant is held in memory, where a lone check takes a path of its own (MemoryChecker.checkNow).
 */
export async function disagreeing(engine: AuthorizationEngine, tenantId: string, queries: readonly Triple[], want: (...q: Triple) => boolean) {
  const inputs = queries.map(([subject, relation, object]) => ({ subject, relation, object }));
  const results = await engine.checkBulk(tenantId, inputs);
  const held = engine.checker.walks.walkScale(tenantId) > 1;
  const single = held ? await Promise.all(inputs.map((input) => engine.check(tenantId, input))) : null;
  return queries.filter(
    (q, i) => results[i]!.allowed !== want(...q) || results[i]!.error !== undefined || (single !== null && single[i] !== want(...q)),
  );
}
