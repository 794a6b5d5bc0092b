import type { Explanation } from './explanation.ts';
import { explainRules } from './explain-rules.ts';
import { eachGivingWay, everyOf, grantWindow, shortestPath, stepsOf, type ExplainGraph, type WindowedGrant } from './explain-walk.ts';
import type { GrantIndex } from './grant-index.ts';
import type { GrantWindow } from './grant-window.ts';
import { AGENT_NAMESPACE, formatRef, MEMBER_RELATION, type Ref, type Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { scopeCovers } from './scope.ts';
import { WorkMeter, type Slice } from './work-meter.ts';
import { NONE } from './none.ts';

export type { Explanation };
export { grantWindow, type ExplainGraph, type Pair, type WindowedGrant } from './explain-walk.ts';
type DenialReason = NonNullable<Explanation['reason']>;

/**
 * Why the check is allowed or denied (docs/checks-and-listings.md#explaining-a-check). The walk is
 * the check's (backwards from the object, breadth-first, each pair once, at most MAX_ARROW_DEPTH
 * arrows, the same steps against the same budget), remembering how each pair was reached, so that
 * the first level where the subject or one of its groups holds a pair gives a path of the fewest
 * grants. Grants outside their window are left out; when that leaves no path, more walks take them
 * in to tell whether only such grants would confer it (grants not yet in force first, then expired ones).
 */
export async function explainCheck(graph: ExplainGraph, schema: CompiledSchema, query: Triple, budget: number, now: number): Promise<Explanation> {
  let scope: readonly string[] | null = null;
  if (query.subject.ns === AGENT_NAMESPACE) {
    scope = await graph.agentScope(query.subject.id);
    if (scope === null) return denied('agent-not-registered');
  }
  const every = everyOf(query.subject);
  if (!(await graph.holdsAnyGrant(query.subject)) && (every === null || !(await graph.holdsAnyGrant(every)))) return denied('no-path');
  if (schema.rules.of(query.object.ns, query.relation) !== undefined) {
    // Decided by its rules once its base holds; else denied for the reasons of its plain part, below.
    const ruled = await explainRules(graph, schema, query, budget, (g) => grantWindow(g, now) === 'in-force');
    if (ruled !== null)
      return ruled.allowed && scope !== null && !scopeCovers(scope, query.object.ns, query.relation) ? denied('agent-scope') : ruled;
  }
  const inForce = await shortestPath(graph, schema, query, budget, (g) => grantWindow(g, now) === 'in-force');
  if (inForce.path !== null) {
    if (scope !== null && !scopeCovers(scope, query.object.ns, query.relation)) return denied('agent-scope');
    return { allowed: true, path: stepsOf(inForce.path), reason: null };
  }
  if (!inForce.skipped) return denied('no-path');
  // A chain without an expired grant would open by waiting: not-yet-valid. Asked of every chain, not
  // of one shortest (which of several is found depends on the order grants are read in), so that
  // memory and the database give the same reason.
  const notExpired = await shortestPath(graph, schema, query, budget, (g) => grantWindow(g, now) !== 'expired');
  if (notExpired.path !== null) return denied('not-yet-valid');
  if (!notExpired.skipped) return denied('no-path');
  const { path } = await shortestPath(graph, schema, query, budget, () => true);
  return denied(path === null ? 'no-path' : 'expired');
}

const denied = (reason: DenialReason): Explanation => ({ allowed: false, path: [], reason });

/**
 * The explain graph of grants held in an in-memory index (a tenant held by a node, or a model file's),
 * as the index holds them at the instant it was last advanced to. The index's lists hold the grants
 * in force, read as unbounded; the grants outside their window come with their windows from the
 * index's lookups of them (each in proportion to what it finds), so that a denial reads `expired`
 * or `not-yet-valid` from memory as it does from the database.
 *
 * Its reads cost what the check's walk costs (matching reads the smaller of the holders and the
 * pair's grants; an arrow's grants are read up to the limit), and give way at the checkpoints of
 * `slice` between pairs: the index may change meanwhile, and then a read throws IndexChanged, so that
 * an explanation never mixes two states of the grants (the caller explains again).
 */
export function indexGraph(
  index: GrantIndex,
  scopeOf: (agentId: string) => readonly string[] | undefined,
  slice: Slice = WorkMeter.unmetered(),
): ExplainGraph {
  const version = index.version;
  // Checked before each pair, awaited only when due: an await on every pair is a promise and a turn of the microtasks each.
  const due = () => slice.due();
  const checkpoint = async () => {
    if ((await slice.checkpoint()) && index.version !== version) throw new IndexChanged();
  };
  // Built as literals of one shape, not spread: explain makes one for each grant it reads (tens of thousands at the limits).
  const unbounded = (subject: Ref, relation: string, object: Ref): WindowedGrant => ({ subject, relation, object, notBefore: null, expiresAt: null });
  const matching = { holders: [] as readonly Ref[], nodes: index.holderNodes([]), holding: new Set<string>() };
  const windowed = (subject: Ref, relation: string, object: Ref, window: GrantWindow): WindowedGrant => ({
    subject,
    relation,
    object,
    notBefore: window.notBefore === null ? null : new Date(window.notBefore),
    expiresAt: window.expiresAt === null ? null : new Date(window.expiresAt),
  });
  const onPair = (object: Ref, relation: string): readonly WindowedGrant[] => {
    const out = index.outOfForceOn(object, relation);
    return out.length === 0 ? NONE : out.map(({ subject, window }) => windowed(subject, relation, object, window));
  };
  return {
    agentScope: async (id) => scopeOf(id) ?? null,
    holdsAnyGrant: async (subject) => index.isSubject(subject) || index.holdsOutOfForce(subject),
    groupsOf: async (subject) => [
      ...index.groupsOfRef(subject).map((object) => unbounded(subject, MEMBER_RELATION, object)),
      ...index.outOfForceMemberships(subject).map(({ object, window }) => windowed(subject, MEMBER_RELATION, object, window)),
    ],
    heldBy: async (pairs, holders, stepsLeft) => {
      // A walk asks with the same holders at every level: looked up once.
      if (holders !== matching.holders)
        Object.assign(matching, { holders, nodes: index.holderNodes(holders), holding: new Set(holders.map(formatRef)) });
      const { nodes, holding } = matching;
      const grants: WindowedGrant[] = [];
      let steps = 0;
      await eachGivingWay(pairs, due, checkpoint, ({ object, relation }) => {
        const matched = index.heldAmong(object, relation, nodes);
        steps += matched.steps;
        if (steps > stepsLeft) return true;
        for (const subject of matched.held) grants.push(unbounded(subject, relation, object));
        for (const grant of onPair(object, relation)) if (holding.has(formatRef(grant.subject))) grants.push(grant);
      });
      return { grants, steps };
    },
    related: async (items, limit) => {
      const grants: WindowedGrant[] = [];
      // Past the limit the caller is past its budget: the grants beyond it are not read.
      await eachGivingWay(items, due, checkpoint, ({ object, via }) => {
        for (const subject of index.subjectsOf(object, via, limit - grants.length)) grants.push(unbounded(subject, via, object));
        grants.push(...onPair(object, via));
        return grants.length >= limit;
      });
      if (grants.length > limit) grants.length = limit;
      return grants;
    },
    checkpoint,
  };
}

/** The grants an explanation was reading changed while it gave way: it is explained again. */
export class IndexChanged extends Error {
  constructor() {
    super('the grants held changed while an explanation read them');
  }
}
