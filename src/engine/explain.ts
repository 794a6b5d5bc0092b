import { overBudget } from './budget.ts';
import type { Explanation } from './explanation.ts';
import type { GrantIndex } from './grant-index.ts';
import { windowOf, windowState, type GrantWindow, type WindowState } from './grant-window.ts';
import { AGENT_NAMESPACE, formatRef, MEMBER_RELATION, type Ref, type Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { arrowsOn, impliedOn, MAX_ARROW_DEPTH, schemaTables, type SchemaTables, type TableKeys } from './schema-tables.ts';
import { scopeCovers } from './scope.ts';
import { WorkMeter, type Slice } from './work-meter.ts';

export type { Explanation };
type Step = Explanation['path'][number];
type DenialReason = NonNullable<Explanation['reason']>;

/**
 * A grant as explain reads it, with its validity window (null: unbounded on that side), judged by
 * grantWindow.
 */
export interface WindowedGrant extends Triple {
  notBefore: Date | null;
  expiresAt: Date | null;
}

/** Whether a grant explain read counts at `now`, or why not: the index's rule (windowState), on the grant's Dates. */
export const grantWindow = ({ notBefore, expiresAt }: Pick<WindowedGrant, 'notBefore' | 'expiresAt'>, now: number): WindowState =>
  notBefore === null && expiresAt === null ? 'in-force' : windowState(windowOf(notBefore?.getTime() ?? null, expiresAt?.getTime() ?? null), now);

/** An (object, relation) pair of the walk. */
export interface Pair {
  object: Ref;
  relation: string;
}

/**
 * What explain reads of one tenant, all from one state of it (the grants held in memory in one
 * turn of the event loop, or one database snapshot). Every grant returned is read whatever its
 * window: explain sorts them out.
 */
export interface ExplainGraph {
  /** The agent's scope; null when no such agent is registered. */
  agentScope(externalId: string): Promise<readonly string[] | null>;
  /** Whether any grant names the subject as its subject. */
  holdsAnyGrant(subject: Ref): Promise<boolean>;
  /** The grants (subject, member, G). */
  groupsOf(subject: Ref): Promise<WindowedGrant[]>;
  /**
   * The grants (h, relation, object) of the pairs whose holder h is one of `holders` (the subject,
   * then its groups), and the steps matching them took beyond the pairs themselves (a check's rule
   * where it counts them, else 0). Past `stepsLeft`, the pairs after the one that went past are not read.
   */
  heldBy(pairs: readonly Pair[], holders: readonly Ref[], stepsLeft: number): Promise<{ grants: WindowedGrant[]; steps: number }>;
  /** The grants (X, via, object) of each item; at most `limit` in all (more: the caller is past its budget). */
  related(items: readonly { object: Ref; via: string }[], limit: number): Promise<WindowedGrant[]>;
  /** Gives way between units of the walk when its slice is spent (in memory: IndexChanged when the grants changed meanwhile). */
  checkpoint(): Promise<void>;
}

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
  if (!(await graph.holdsAnyGrant(query.subject))) return denied('no-path');
  const inForce = await shortestPath(graph, schema, query, budget, (g) => grantWindow(g, now) === 'in-force');
  if (inForce.path !== null) {
    if (scope !== null && !scopeCovers(scope, query.object.ns, query.relation)) return denied('agent-scope');
    return { allowed: true, path: inForce.path.map(({ grant, via }) => ({ ...refsOf(grant), via })), reason: null };
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

/** Grants a walk takes in between two checkpoints of its graph: a few hundred microseconds of its own work. */
const CHECKPOINT_EVERY = 256;

/** A pair of the walk and how it was reached: from the pair `parent` through the arrow grant `arrow` (the start's pairs have neither). */
interface Visit extends Pair {
  /** The relation needed on the object: the checked one, or an arrow's target. */
  needed: string;
  parent: number;
  arrow: { grant: WindowedGrant; via: string; target: string } | null;
}

/** A grant of a path and how it counts (a step's `via`). */
interface PathStep {
  grant: WindowedGrant;
  via: Step['via'];
}

async function shortestPath(
  graph: ExplainGraph,
  schema: CompiledSchema,
  query: Triple,
  budget: number,
  counts: (grant: WindowedGrant) => boolean,
): Promise<{ path: PathStep[] | null; skipped: boolean }> {
  let skipped = false;
  const keep = (grants: WindowedGrant[]) =>
    grants.filter((g) => {
      const kept = counts(g);
      skipped ||= !kept;
      return kept;
    });
  const tables = tablesOf(schema);
  const groups = keep(await graph.groupsOf(query.subject));
  const visits: Visit[] = [];
  const seen = new Set<string>();
  const visit = (object: Ref, relation: string, needed: string, parent: number, arrow: Visit['arrow']) => {
    const key = `${formatRef(object)}#${relation}`;
    if (seen.has(key)) return;
    seen.add(key);
    visits.push({ object, relation, needed, parent, arrow });
  };
  for (const implied of impliedOn(tables, query.object.ns, query.relation)) visit(query.object, implied, query.relation, -1, null);
  const holders = [query.subject, ...groups.map((g) => g.object)];
  let steps = groups.length;
  let sinceCheckpoint = 0;
  /** Counts a unit of the walk's own work; every CHECKPOINT_EVERY of them the graph may give way. */
  const worked = async () => {
    if (++sinceCheckpoint < CHECKPOINT_EVERY) return;
    sinceCheckpoint = 0;
    await graph.checkpoint();
  };
  for (let depth = 0, from = 0; from < visits.length; depth++) {
    const to = visits.length;
    const level = visits.slice(from, to);
    const matched = await graph.heldBy(level, holders, budget - steps);
    steps += matched.steps;
    const held = keep(matched.grants);
    const found = held.find((g) => sameRef(g.subject, query.subject)) ?? held[0];
    if (found !== undefined) {
      const at = from + level.findIndex((v) => v.relation === found.relation && sameRef(v.object, found.object));
      const membership = sameRef(found.subject, query.subject) ? null : groups.find((g) => sameRef(g.object, found.subject))!;
      return { path: pathTo(visits, at, found, membership), skipped };
    }
    if (steps > budget) throw overBudget(budget);
    if (depth === MAX_ARROW_DEPTH) break;
    steps += to - from;
    if (steps > budget) throw overBudget(budget);
    const items: { i: number; object: Ref; via: string }[] = [];
    for (const [i, v] of level.entries()) {
      await worked();
      for (const { via } of arrowsOn(tables, v.object.ns, v.relation)) items.push({ i, object: v.object, via });
    }
    const related = items.length > 0 ? await graph.related(items, budget - steps + 1) : [];
    steps += related.length;
    if (steps > budget) throw overBudget(budget);
    const byItem = new Map<string, WindowedGrant[]>();
    for (const grant of keep(related)) {
      await worked();
      const key = `${formatRef(grant.object)}#${grant.relation}`;
      const list = byItem.get(key);
      if (list) list.push(grant);
      else byItem.set(key, [grant]);
    }
    for (const { i, object, via } of items) {
      for (const grant of byItem.get(`${formatRef(object)}#${via}`) ?? []) {
        await worked();
        for (const target of arrowsOn(tables, object.ns, level[i]!.relation).find((a) => a.via === via)!.targets) {
          for (const implied of impliedOn(tables, grant.subject.ns, target)) visit(grant.subject, implied, target, from + i, { grant, via, target });
        }
      }
    }
    from = to;
  }
  return { path: null, skipped };
}

/** The steps from the subject to the checked object: its membership, the grant held, then each arrow's grant back to the start. */
function pathTo(visits: readonly Visit[], at: number, held: WindowedGrant, membership: WindowedGrant | null): PathStep[] {
  const path: PathStep[] = [];
  if (membership) path.push({ grant: membership, via: 'member' });
  const pair = visits[at]!;
  path.push({ grant: held, via: pair.relation === pair.needed ? 'direct' : `includes:${pair.relation}` });
  for (let v = pair; v.arrow !== null; v = visits[v.parent]!) path.push({ grant: v.arrow.grant, via: `arrow:${v.arrow.via}->${v.arrow.target}` });
  return path;
}

const refsOf = (grant: Triple) => ({ subject: formatRef(grant.subject), relation: grant.relation, object: formatRef(grant.object) });
const sameRef = (a: Ref, b: Ref) => a.ns === b.ns && a.id === b.id;

/** The schema's tables by name, made once per schema. */
function tablesOf(schema: CompiledSchema): SchemaTables<string> {
  let tables = TABLES.get(schema);
  if (tables === undefined) {
    tables = schemaTables(schema, BY_NAME);
    TABLES.set(schema, tables);
  }
  return tables;
}
const TABLES = new WeakMap<CompiledSchema, SchemaTables<string>>();
const BY_NAME: TableKeys<string> = { namespace: (name) => name, relation: (name) => name };

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
  const onPair = (object: Ref, relation: string) =>
    index.outOfForceOn(object, relation).map(({ subject, window }) => windowed(subject, relation, object, window));
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
      for (const { object, relation } of pairs) {
        await checkpoint();
        const matched = index.heldAmong(object, relation, nodes);
        steps += matched.steps;
        if (steps > stepsLeft) break;
        for (const subject of matched.held) grants.push(unbounded(subject, relation, object));
        for (const grant of onPair(object, relation)) if (holding.has(formatRef(grant.subject))) grants.push(grant);
      }
      return { grants, steps };
    },
    related: async (items, limit) => {
      const grants: WindowedGrant[] = [];
      for (const { object, via } of items) {
        await checkpoint();
        // Past the limit the caller is past its budget: the grants beyond it are not read.
        for (const subject of index.subjectsOf(object, via, limit - grants.length)) grants.push(unbounded(subject, via, object));
        grants.push(...onPair(object, via));
        if (grants.length >= limit) return grants.slice(0, limit);
      }
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
