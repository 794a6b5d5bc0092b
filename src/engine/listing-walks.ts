import { isCheckTooComplex } from './budget.ts';
import { NO_NODE, type CheckWalk } from './check-walk.ts';
import type { HoldersQuery, ReachableQuery } from './checker.ts';
import type { GrantEdges } from './grant-edges.ts';
import type { NodeNames } from './node-names.ts';
import type { CompiledSchema } from './schema.ts';
import { conferredOn, MAX_ARROW_DEPTH } from './schema-tables.ts';

/**
 * The listings of a GrantIndex, what SqlListings' statements answer (REACHABLE_SQL and the
 * holders' walk) without a round trip: objects a subject reaches walking forwards, and subjects
 * that hold a relation on an object walking backwards as a check does. Each picks its page by the
 * ids' ranks (IdRanks). A walk runs start to end in one go, in the check's Walk (CheckWalk.walk).
 */
export class ListingWalks {
  /** A listing's ids after the cursor, as nodes, reused likewise. */
  private readonly found: number[] = [];

  constructor(
    private readonly names: NodeNames,
    private readonly edges: GrantEdges,
    private readonly checks: CheckWalk,
  ) {}

  /** GrantIndex.reachable. */
  reachable(schema: CompiledSchema, query: ReachableQuery): string[] | null {
    const names = this.names;
    const tables = names.tablesOf(schema);
    const namespace = names.namespaceOf(query.namespace);
    const relation = names.relationOf(query.relation);
    const holders = this.checks.holdersOf(query.subject);
    if (holders === null || namespace === undefined || relation === undefined) return [];
    // Nothing else walks meanwhile: a listing walk runs start to end in one go, as a check does.
    const walk = this.checks.walk;
    walk.clear();
    // Nothing is added or numbered during a walk, so the arena and the namespaces stay where they are.
    const grantsBy = this.edges.grantsBy;
    const pairs = grantsBy.arena;
    const nodeNs = names.nodeNs;
    // The budget bounds the grants read as well as the pairs found: a node of many grants costs its reading.
    let read = 0;
    for (const holder of [holders.self, ...holders.groups]) {
      read += (grantsBy.to(holder) - grantsBy.from(holder)) / 2;
      for (let i = grantsBy.from(holder), end = grantsBy.to(holder); i < end; i += 2) {
        const object = pairs[i + 1]!;
        for (const conferred of conferredOn(tables, nodeNs[object]!, pairs[i]!)) walk.visit(object, conferred);
      }
      if (Math.max(walk.size, read) > query.budget) return null;
    }
    for (let depth = 0, from = 0; depth < MAX_ARROW_DEPTH && from < walk.size; depth++) {
      const to = walk.size;
      for (let i = from; i < to; i++) {
        const held = walk.objects[i]!;
        const [start, end] = [grantsBy.from(held), grantsBy.to(held)];
        read += (end - start) / 2;
        // Most pairs of a listing are on objects that are the subject of no grant: nothing to look up.
        const byVia = end > start ? tables.arrowsOut.get(walk.relations[i]!) : undefined;
        if (byVia !== undefined) {
          // A node's grants mostly share their relation and their objects' namespace: looked up when they change.
          let [via, ns] = [-1, -1];
          let byNamespace: Map<number, number[]> | undefined;
          let conferred: number[] | undefined;
          for (let j = start; j < end; j += 2) {
            if (pairs[j] !== via) [via, byNamespace, ns] = [pairs[j]!, byVia.get(pairs[j]!), -1];
            if (byNamespace === undefined) continue;
            const object = pairs[j + 1]!;
            if (nodeNs[object] !== ns) [ns, conferred] = [nodeNs[object]!, byNamespace.get(nodeNs[object]!)];
            if (conferred !== undefined) for (const next of conferred) walk.visit(object, next);
          }
        }
        if (Math.max(walk.size, read) > query.budget) return null;
      }
      from = to;
    }
    const [ids, after, ranks] = [names.nodeId, query.after, names.ranks];
    ranks.refresh(namespace, names.nodesByNs[namespace]!, ids, nodeNs);
    const above = after === null ? 0 : ranks.firstAbove(namespace, after, ids, nodeNs);
    const found = this.found;
    found.length = 0;
    for (let i = 0; i < walk.size; i++) {
      const object = walk.objects[i]!;
      if (walk.relations[i] !== relation || nodeNs[object] !== namespace) continue;
      if (after === null || ranks.isAbove(object, after, above, ids)) found.push(object);
    }
    return ranks.smallest(namespace, found, query.limit, ids);
  }

  /** GrantIndex.holders. */
  holders(schema: CompiledSchema, query: HoldersQuery, admits: (id: string) => boolean): string[] | null {
    const names = this.names;
    const tables = names.tablesOf(schema);
    const start = names.nodeOf(query.object);
    const relation = names.relationOf(query.relation);
    const namespace = names.namespaceOf(query.namespace);
    if (start === undefined || relation === undefined || namespace === undefined) return [];
    try {
      this.checks.walkBackwards(tables, start, relation, NO_NODE, [], query.budget);
    } catch (error) {
      if (isCheckTooComplex(error)) return null;
      throw error;
    }
    const walk = this.checks.walk;
    const [grantsOn, memberRelation, related] = [this.edges.grantsOn, names.member, this.checks.related];
    let read = walk.size;
    const expanded = new Set<number>();
    const [ids, after, ranks, nodeNs] = [names.nodeId, query.after, names.ranks, names.nodeNs];
    ranks.refresh(namespace, names.nodesByNs[namespace]!, ids, nodeNs);
    const above = after === null ? 0 : ranks.firstAbove(namespace, after, ids, nodeNs);
    const found = new Set<number>();
    const members: number[] = [];
    // The namespace's `*` among the holders: every subject of it holds, which candidates list (null: the caller checks them).
    const every = names.wildcardOf(query.namespace);
    const take = (node: number) => {
      if (nodeNs[node] !== namespace) return true;
      if (node === every) return false;
      if ((after === null || ranks.isAbove(node, after, above, ids)) && admits(ids[node]!)) found.add(node);
      return true;
    };
    for (let i = 0; i < walk.size; i++) {
      for (const holder of grantsOn.othersWith(walk.objects[i]!, walk.relations[i]!, related)) {
        if (!take(holder)) return null;
        if (expanded.has(holder)) continue;
        expanded.add(holder);
        read += 1 + grantsOn.countWith(holder, memberRelation);
        if (read > query.budget) return null;
        for (const member of grantsOn.othersWith(holder, memberRelation, members)) if (!take(member)) return null;
      }
    }
    return ranks.smallest(namespace, [...found], query.limit, ids);
  }
}
