import { overBudget } from './budget.ts';
import type { Explanation } from './explanation.ts';
import { windowOf, windowState, type WindowState } from './grant-window.ts';
import { EVERY_SUBJECT_ID, formatRef, type Ref, type Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { arrowsOn, impliedOn, MAX_ARROW_DEPTH, schemaTables, type SchemaTables, type TableKeys } from './schema-tables.ts';

type Step = Explanation['path'][number];

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

/** A path as the answer shows it. */
export const stepsOf = (path: readonly PathStep[]): Step[] => path.map(({ grant, via }) => ({ ...refsOf(grant), via }));

/** `<ns>:*` of the subject's namespace, whose grants every subject of it holds; null for that subject itself. */
export const everyOf = (subject: Ref): Ref | null => (subject.id === EVERY_SUBJECT_ID ? null : { ns: subject.ns, id: EVERY_SUBJECT_ID });

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
export interface PathStep {
  grant: WindowedGrant;
  via: Step['via'];
}

/**
 * The walk of a check (the plain model's: schema's tables) remembering how each pair was reached,
 * at most `maxDepth` arrows deep; its path, whether a grant was left out by `counts`, and the steps taken.
 */
export async function shortestPath(
  graph: ExplainGraph,
  schema: CompiledSchema,
  query: Triple,
  budget: number,
  counts: (grant: WindowedGrant) => boolean,
  maxDepth = MAX_ARROW_DEPTH,
): Promise<{ path: PathStep[] | null; skipped: boolean; steps: number }> {
  let skipped = false;
  const keep = (grants: WindowedGrant[]) =>
    grants.filter((g) => {
      const kept = counts(g);
      skipped ||= !kept;
      return kept;
    });
  const tables = tablesOf(schema);
  const every = everyOf(query.subject);
  // The subject's memberships, then (docs/model.md#public-grants) its namespace's `*` and the memberships of that.
  const groups = keep(await graph.groupsOf(query.subject));
  const everyGroups = every === null ? [] : keep(await graph.groupsOf(every));
  const visits: Visit[] = [];
  const seen = new Set<string>();
  /** Visits the pair (object, relation), needed as `needed`, reached from the pair `parent` through `grant`'s arrow `via` (the start's pairs: none). */
  const visit = (object: Ref, relation: string, needed: string, parent: number, grant: WindowedGrant | null, via: string) => {
    const key = pairKey(object, relation);
    if (seen.has(key)) return;
    seen.add(key);
    visits.push({ object, relation, needed, parent, arrow: grant === null ? null : { grant, via, target: needed } });
  };
  for (const implied of impliedOn(tables, query.object.ns, query.relation)) visit(query.object, implied, query.relation, -1, null, '');
  const holders = [query.subject, ...groups.map((g) => g.object), ...(every === null ? [] : [every, ...everyGroups.map((g) => g.object)])];
  let steps = groups.length + everyGroups.length;
  let sinceCheckpoint = 0;
  /**
   * Counts a unit of the walk's own work: true every CHECKPOINT_EVERY of them, when the graph may
   * give way. Not an async function awaited on every unit: that is a promise and a turn of the
   * microtasks for each of tens of thousands of units.
   */
  const checkpointDue = () => {
    if (++sinceCheckpoint < CHECKPOINT_EVERY) return false;
    sinceCheckpoint = 0;
    return true;
  };
  const giveWay = () => graph.checkpoint();
  for (let depth = 0, from = 0; from < visits.length; depth++) {
    const to = visits.length;
    const level = visits.slice(from, to);
    const matched = await graph.heldBy(level, holders, budget - steps);
    steps += matched.steps;
    const held = keep(matched.grants);
    const found = held.find((g) => sameRef(g.subject, query.subject)) ?? held[0];
    if (found !== undefined) {
      const at = from + level.findIndex((v) => v.relation === found.relation && sameRef(v.object, found.object));
      const membership =
        sameRef(found.subject, query.subject) || (every !== null && sameRef(found.subject, every))
          ? null
          : (groups.find((g) => sameRef(g.object, found.subject)) ?? everyGroups.find((g) => sameRef(g.object, found.subject))!);
      return { path: pathTo(visits, at, found, membership), skipped, steps };
    }
    if (steps > budget) throw overBudget(budget);
    if (depth === maxDepth) break;
    steps += to - from;
    if (steps > budget) throw overBudget(budget);
    const items: Item[] = [];
    await eachGivingWay(level, checkpointDue, giveWay, ({ object, relation }, i) => {
      for (const { via, targets } of arrowsOn(tables, object.ns, relation)) items.push({ i, object, via, targets });
    });
    const related = items.length > 0 ? keep(await graph.related(items, budget - steps + 1)) : [];
    steps += related.length;
    if (steps > budget) throw overBudget(budget);
    const byItem = new Map<string, WindowedGrant[]>();
    await eachGivingWay(related, checkpointDue, giveWay, (grant) => {
      const key = pairKey(grant.object, grant.relation);
      const list = byItem.get(key);
      if (list) list.push(grant);
      else byItem.set(key, [grant]);
    });
    const arrows = itemMajor(items, byItem);
    await eachGivingWay(arrows.grants, checkpointDue, giveWay, (grant, n) => {
      const { i, via, targets } = items[arrows.items[n]!]!;
      for (const target of targets) {
        for (const implied of impliedOn(tables, grant.subject.ns, target)) visit(grant.subject, implied, target, from + i, grant, via);
      }
    });
    from = to;
  }
  return { path: null, skipped, steps };
}

/** A pair of a level and one relation its arrows go through (the pair's `i` in the level). */
interface Item {
  i: number;
  object: Ref;
  via: string;
  targets: readonly string[];
}

/** Each item's grants in turn, with the item of each (an index into `items`): the order the walk visits them in. */
function itemMajor(items: readonly Item[], byItem: ReadonlyMap<string, WindowedGrant[]>): { grants: WindowedGrant[]; items: number[] } {
  const ordered = { grants: [] as WindowedGrant[], items: [] as number[] };
  items.forEach(({ object, via }, k) => {
    for (const grant of byItem.get(pairKey(object, via)) ?? []) {
      ordered.grants.push(grant);
      ordered.items.push(k);
    }
  });
  return ordered;
}

/**
 * Runs `unit` on each of `list` in turn, awaiting `giveWay` first whenever `due` says so; stops
 * early when `unit` returns true. The loop is indexed, and each unit a function of its own, because
 * a for-of in an async function allocates its iterator and a result for every step (a third of a
 * wide explanation's garbage), while the loops inside a unit are plain synchronous code.
 */
export async function eachGivingWay<T>(
  list: readonly T[],
  due: () => boolean,
  giveWay: () => Promise<void>,
  unit: (element: T, index: number) => boolean | void,
): Promise<void> {
  for (let i = 0; i < list.length; i++) {
    if (due()) await giveWay();
    if (unit(list[i]!, i) === true) return;
  }
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

/** The key of an (object, relation) pair among the walk's. */
const pairKey = (object: Ref, relation: string) => `${formatRef(object)}#${relation}`;

export const refsOf = (grant: Triple) => ({ subject: formatRef(grant.subject), relation: grant.relation, object: formatRef(grant.object) });
export const sameRef = (a: Ref, b: Ref) => a.ns === b.ns && a.id === b.id;

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
