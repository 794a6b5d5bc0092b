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
  /** The relations of each declared namespace (an open one, null or absent, has no definitions: plain). */
  definitions: Readonly<Record<string, RelationDefinitions | null>>;
  /** The grants in force. */
  grants: readonly Triple[];
  /** The scope of each registered agent, by external id. */
  scopes: ReadonlyMap<string, readonly string[]>;
}

const namespaceOf = (ref: string) => ref.slice(0, ref.indexOf(':'));

/** Thrown by referenceCheck for a check whose `requires` or `excludes` reference 16 arrows do not decide (422 by the engine). */
export class TooComplex extends Error {}

/**
 * The answer of every check on the tenant, by the rules of docs/model.md#what-a-check-means:
 * check(S, R, O) = allowed(S, R, O), and for S = agent:<id> the agent is registered and its scope
 * covers (O's namespace, R), once, at the top; allowed = base, every `requires` reference and no
 * `excludes` one; base = a grant (X, R, O) to X in {S} ∪ groups(S) ∪ {S's namespace:*}, or an
 * `includes` reference; a reference `R'` is allowed(S, R', O), and `T->R'` is allowed(S, R', X) for
 * a grant (X, T, O), at most 16 arrows in one chain from the checked object (requires and excludes
 * count too). What lies past them is not held, except under a `requires` or `excludes` reference,
 * which must be decided (docs/model.md#model-limits): there a grant (X, T, O) past the 16th arrow
 * makes the value unknown, and a reference whose value is unknown throws TooComplex. Without
 * requires, excludes and `*` this is the model as it always was.
 */
export function referenceCheck({ definitions, grants, scopes }: ReferenceTenant): (...query: Triple) => boolean {
  const has = new Set(grants.map((t) => t.join(' ')));

  return (subject, rel, obj) => {
    const sns = namespaceOf(subject);
    if (sns === 'agent') {
      // agent:* is no registered agent (an agent's id is never `*`): it holds nothing.
      const scope = scopes.get(subject.slice('agent:'.length));
      const ons = namespaceOf(obj);
      const covered = scope?.some((e) => {
        const [a, b] = e.split(':');
        return (a === '*' || a === ons) && (b === '*' || b === rel);
      });
      if (!covered) return false;
    }
    const every = `${sns}:*`;
    // One level: groups of S and of S's namespace's wildcard; a group's own wildcard does not reach its members.
    const groups = grants.filter(([s, r]) => (s === subject || s === every) && r === 'member').map(([, , o]) => o);
    const holders = [...new Set([subject, every, ...groups])];
    // Keyed by depth, as arrows count: a key met again on its own path is a cycle of same-object
    // references at one depth (refused for includes, never drawn for requires), read as false.
    const memo = new Map<string, boolean | undefined>();
    // Values may be unknown (undefined) under a requires or excludes reference: or, and and of three values.
    const or = (a: boolean | undefined, b: () => boolean | undefined) => (a === true ? true : either(a, b()));
    const either = (a: boolean | undefined, b: boolean | undefined) =>
      a === true || b === true ? true : a === undefined || b === undefined ? undefined : false;

    const allowed = (r: string, o: string, depth: number, decide: boolean): boolean | undefined => {
      const key = `${r} ${o} ${depth} ${decide}`;
      if (memo.has(key)) return memo.get(key);
      memo.set(key, false);
      const definition = definitions[namespaceOf(o)]?.[r];
      let base: boolean | undefined = holders.some((x) => has.has(`${x} ${r} ${o}`));
      for (const i of definition?.includes ?? []) base = or(base, () => holdsRef(i, o, depth, decide));
      // In the definition's order, each reference decided only while the answer still depends on it.
      const result =
        base !== false &&
        (definition?.requires ?? []).every((q) => decided(q, o, depth)) &&
        !(definition?.excludes ?? []).some((e) => decided(e, o, depth))
          ? base
          : false;
      memo.set(key, result);
      return result;
    };

    const decided = (entry: string, o: string, depth: number): boolean => {
      const value = holdsRef(entry, o, depth, true);
      if (value === undefined) throw new TooComplex(`${entry} on ${o} at depth ${depth}`);
      return value;
    };

    const holdsRef = (entry: string, o: string, depth: number, decide: boolean): boolean | undefined => {
      const arrow = entry.indexOf('->');
      if (arrow < 0) return allowed(entry, o, depth, decide);
      const [via, target] = [entry.slice(0, arrow), entry.slice(arrow + 2)];
      const related = grants.filter(([, r, on]) => r === via && on === o).map(([x]) => x);
      if (depth >= 16) return decide && related.length > 0 ? undefined : false;
      return related.reduce<boolean | undefined>((value, x) => or(value, () => allowed(target, x, depth + 1, decide)), false);
    };

    return allowed(rel, obj, 0, false) === true;
  };
}

/** Checks of every subject in `subjects` on every object in `objects`, for each of `relations`. */
export function queriesOn(subjects: readonly string[], objects: readonly string[], relations: readonly string[] = ['r0', 'r1', 'r2']): Triple[] {
  return subjects.flatMap((subject) => objects.flatMap((obj) => relations.map((rel): Triple => [subject, rel, obj])));
}

/**
 * The checks among `queries` on which the engine and `want` disagree: in a bulk, and one by one too
 * where the tenant is held in memory, where a lone check takes a path of its own (MemoryChecker.checkNow),
 * and as the check route asks it, at once when it can be (AuthorizationEngine.checkNow).
 */
export async function disagreeing(engine: AuthorizationEngine, tenantId: string, queries: readonly Triple[], want: (...q: Triple) => boolean) {
  const inputs = queries.map(([subject, relation, object]) => ({ subject, relation, object }));
  const results = await engine.checkBulk(tenantId, inputs);
  const held = engine.checker.walks.walkScale(tenantId) > 1;
  const single = held ? await Promise.all(inputs.map((input) => engine.check(tenantId, input))) : null;
  const atOnce = held
    ? await Promise.all(inputs.map(async (input) => engine.checkNow(tenantId, input) ?? (await engine.check(tenantId, input))))
    : null;
  return queries.filter(
    (q, i) =>
      results[i]!.allowed !== want(...q) ||
      results[i]!.error !== undefined ||
      (single !== null && single[i] !== want(...q)) ||
      (atOnce !== null && atOnce[i] !== want(...q)),
  );
}
