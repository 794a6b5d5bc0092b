import { EdgeLists } from './edge-lists.ts';
import type { GraphQuery } from './engine.ts';
import { MEMBER_RELATION, type Ref } from './refs.ts';
import type { CompiledSchema } from './schema.ts';

/** Longest chain of arrows (`T->R`) a check follows (API.md). */
export const MAX_ARROW_DEPTH = 16;

/** A grant as the index holds it. */
export interface IndexedGrant {
  subject: Ref;
  relation: string;
  object: Ref;
}

/**
 * From how many pairs a node's list gets a map to its pairs. A check asks the object side whether
 * a node holds a relation, so it gets one early; the subject side is searched only to remove a
 * grant (the object side has already told whether a grant is new), so it is scanned far longer.
 */
const INDEX_FROM = { holders: 16, objects: 1024 } as const;

/** An arrow in the index's numbers: holders of `target` on an X with a grant (X, `via`, o) hold the relation on o. */
interface Arrow {
  via: number;
  target: number;
}

/** A compiled schema's tables in the index's numbers. */
interface SchemaTables {
  /** By namespace and relation R: the relations whose holders hold R (a check walks these backwards). */
  implied: Map<number, Map<number, number[]>>;
  /** By namespace and relation: the arrows that confer it. */
  arrows: Map<number, Map<number, Arrow[]>>;
  /** By namespace and relation R: the relations that holding R confers (a listing walks these forwards). */
  conferred: Map<number, Map<number, number[]>>;
  /**
   * By `via`, then by the relation held on the object X at the arrow's far end, then by the
   * namespace of o: the relations conferred on o by a grant (X, via, o).
   */
  arrowsOut: Map<number, Map<number, Map<number, number[]>>>;
}

/**
 * One tenant's grants in memory, indexed both ways: from an object to its relations and their
 * holders (a check walks backwards from the object) and from a subject to its relations and their
 * objects (a listing walks forwards from the subject; its groups are its `member` objects).
 * `check` answers exactly what the store's check statement answers (CHECK_SQL), and `reachable`
 * what its listing walk answers (REACHABLE_SQL), without a round trip.
 *
 * Every subject and object is a node, a small integer, and relations and namespaces are numbered
 * too: a check looks its two refs up once (by namespace, then id: no key is built) and then
 * compares integers, which keeps it to a few microseconds on tenants of millions of grants. The
 * grants themselves are integers in typed arrays (EdgeLists), which the garbage collector does not
 * trace. A node no grant names any more is forgotten and its number reused, so churn does not grow
 * the index.
 */
export class GrantIndex {
  /** Nodes by namespace number, then id. */
  private readonly nodesByNs: Array<Map<string, number>> = [];
  private readonly namespaceNumbers = new Map<string, number>();
  private readonly relationNumbers = new Map<string, number>();
  /** Per node: its namespace's number, its id, and how many grants name it. */
  private readonly nodeNs: number[] = [];
  private readonly nodeId: Array<string | undefined> = [];
  /** Per object node: (relation, holder) pairs. */
  private readonly grantsOn = new EdgeLists(INDEX_FROM.holders);
  /** Per subject node: (relation, object) pairs. */
  private readonly grantsBy = new EdgeLists(INDEX_FROM.objects);
  /**
   * Per subject node: its `member` pairs again, so that finding a subject's groups, which every
   * check does, reads those alone and not all the subject's grants (hundreds for a user at L).
   */
  private readonly memberships = new EdgeLists(INDEX_FROM.objects);
  private readonly references: number[] = [];
  private readonly freeNodes: number[] = [];
  private readonly member = this.relationNumber(MEMBER_RELATION);
  private readonly tables = new WeakMap<CompiledSchema, SchemaTables>();
  /** The walk, the subject's groups and an arrow's related objects of the check under way, reused: a check runs start to end in one go. */
  private readonly walk = new Walk(1);
  private readonly groups: number[] = [];
  private readonly related: number[] = [];
  /** Grants held. */
  size = 0;

  /** Adds the grant; false when it was already held. */
  add(grant: IndexedGrant): boolean {
    const subject = this.nodeFor(grant.subject);
    const object = this.nodeFor(grant.object);
    const relation = this.relationNumber(grant.relation);
    if (this.grantsOn.has(object, relation, subject)) return false;
    this.grantsOn.add(object, relation, subject);
    this.grantsBy.add(subject, relation, object);
    if (relation === this.member) this.memberships.add(subject, relation, object);
    this.references[subject]!++;
    this.references[object]!++;
    this.size++;
    return true;
  }

  /** Removes the grant; false when it was not held. */
  remove(grant: IndexedGrant): boolean {
    const subject = this.nodeOf(grant.subject);
    const object = this.nodeOf(grant.object);
    const relation = this.relationNumbers.get(grant.relation);
    if (subject === undefined || object === undefined || relation === undefined) return false;
    if (!this.grantsOn.remove(object, relation, subject)) return false;
    this.grantsBy.remove(subject, relation, object);
    if (relation === this.member) this.memberships.remove(subject, relation, object);
    this.release(subject);
    this.release(object);
    this.size--;
    return true;
  }

  /**
   * Removes the grant if held, else adds it. A logged change flipped the grant from the state its
   * statement found, so replaying a set of changes this way ends in the same state in any order.
   */
  flip(grant: IndexedGrant): void {
    if (!this.remove(grant)) this.add(grant);
  }

  /**
   * Does the subject, or an object it is a direct member of, hold the relation on the object?
   * Walks backwards from the object breadth-first: the relations that imply the checked one, then
   * through arrows to related objects, at most MAX_ARROW_DEPTH arrows deep. Agent scope masks are
   * the engine's, not the graph's.
   */
  check(schema: CompiledSchema, query: GraphQuery): boolean {
    // Numbers the schema's relations first: one that no grant names may still be held through another.
    const tables = this.tablesOf(schema);
    // A subject no grant names holds nothing; a relation neither a grant nor the schema names, no one holds.
    const self = this.nodeOf(query.subject);
    const start = this.nodeOf(query.object);
    const relation = this.relationNumbers.get(query.relation);
    if (self === undefined || start === undefined || relation === undefined) return false;
    const groups = this.groupsOf(self, this.groups);
    const walk = this.walk;
    walk.clear(this.relationNumbers.size);
    for (const implied of this.implied(tables, start, relation)) walk.visit(start, implied);
    const grantsOn = this.grantsOn;
    for (let depth = 0, from = 0; from < walk.objects.length; depth++) {
      const to = walk.objects.length;
      for (let i = from; i < to; i++) {
        if (grantsOn.hasAny(walk.objects[i]!, walk.relations[i]!, self, groups)) return true;
      }
      if (depth === MAX_ARROW_DEPTH) break;
      for (let i = from; i < to; i++) {
        const object = walk.objects[i]!;
        const arrows = tables.arrows.get(this.nodeNs[object]!)?.get(walk.relations[i]!);
        if (arrows === undefined) continue;
        for (const arrow of arrows) {
          for (const next of grantsOn.othersWith(object, arrow.via, this.related)) {
            for (const implied of this.implied(tables, next, arrow.target)) walk.visit(next, implied);
          }
        }
      }
      from = to;
    }
    return false;
  }

  /**
   * Ids of `namespace` objects on which the subject, or an object it is a direct member of, holds
   * `relation`: ascending (ids are ASCII, so string order is byte order), after `after`, at most
   * `limit`. Walks forwards from those subjects breadth-first, each (object, relation) once: the
   * relations each grant confers, then arrows out of what is held, at most MAX_ARROW_DEPTH deep.
   * Null when the walk would visit more than `budget` pairs (the caller pages some other way).
   */
  reachable(
    schema: CompiledSchema,
    query: { subject: Ref; namespace: string; relation: string; after: string | null; limit: number; budget: number },
  ): string[] | null {
    const tables = this.tablesOf(schema);
    const self = this.nodeOf(query.subject);
    const namespace = this.namespaceNumbers.get(query.namespace);
    const relation = this.relationNumbers.get(query.relation);
    if (self === undefined || namespace === undefined || relation === undefined) return [];
    const walk = new Walk(this.relationNumbers.size);
    // Nothing is added during a walk, so the arena stays where it is.
    const grantsBy = this.grantsBy;
    const pairs = grantsBy.arena;
    for (const holder of [self, ...this.groupsOf(self, [])]) {
      for (let i = grantsBy.from(holder), end = grantsBy.to(holder); i < end; i += 2) {
        const object = pairs[i + 1]!;
        for (const conferred of this.conferred(tables, object, pairs[i]!)) walk.visit(object, conferred);
      }
      if (walk.objects.length > query.budget) return null;
    }
    for (let depth = 0, from = 0; depth < MAX_ARROW_DEPTH && from < walk.objects.length; depth++) {
      const to = walk.objects.length;
      for (let i = from; i < to; i++) {
        const held = walk.objects[i]!;
        for (let j = grantsBy.from(held), end = grantsBy.to(held); j < end; j += 2) {
          const byNamespace = tables.arrowsOut.get(pairs[j]!)?.get(walk.relations[i]!);
          if (byNamespace === undefined) continue;
          const object = pairs[j + 1]!;
          const conferred = byNamespace.get(this.nodeNs[object]!);
          if (conferred !== undefined) for (const next of conferred) walk.visit(object, next);
        }
        if (walk.objects.length > query.budget) return null;
      }
      from = to;
    }
    const ids: string[] = [];
    for (let i = 0; i < walk.objects.length; i++) {
      const object = walk.objects[i]!;
      if (walk.relations[i] !== relation || this.nodeNs[object] !== namespace) continue;
      const id = this.nodeId[object]!;
      if (query.after === null || id > query.after) ids.push(id);
    }
    return smallest(ids, query.limit);
  }

  /** The objects the node is a direct member of, into `groups`. */
  private groupsOf(node: number, groups: number[]): number[] {
    return this.memberships.othersWith(node, this.member, groups);
  }

  /** Relations that holding `relation` on `node` confers: `relation` itself in an open namespace. */
  private conferred(tables: SchemaTables, node: number, relation: number): readonly number[] {
    return tables.conferred.get(this.nodeNs[node]!)?.get(relation) ?? [relation];
  }

  /** Relations whose holders hold `relation` on `node`: `relation` itself in an open namespace. */
  private implied(tables: SchemaTables, node: number, relation: number): readonly number[] {
    return tables.implied.get(this.nodeNs[node]!)?.get(relation) ?? [relation];
  }

  /** The schema's tables in this index's numbers, made once per schema. */
  private tablesOf(schema: CompiledSchema): SchemaTables {
    let tables = this.tables.get(schema);
    if (tables === undefined) {
      tables = { implied: new Map(), arrows: new Map(), conferred: new Map(), arrowsOut: new Map() };
      for (const row of schema.closure) {
        const [ns, rel, implied] = [this.namespaceNumber(row.ns), this.relationNumber(row.rel), this.relationNumber(row.implied)];
        append(tables.implied, ns, rel, implied);
        append(tables.conferred, ns, implied, rel);
      }
      for (const row of schema.arrows) {
        const [ns, rel, via, target] = [this.namespaceNumber(row.ns), this.relationNumber(row.rel), this.relationNumber(row.via), this.relationNumber(row.target)];
        append(tables.arrows, ns, rel, { via, target });
        let byTarget = tables.arrowsOut.get(via);
        if (!byTarget) tables.arrowsOut.set(via, (byTarget = new Map()));
        let byNamespace = byTarget.get(target);
        if (!byNamespace) byTarget.set(target, (byNamespace = new Map()));
        // An arrow's relation is declared, so the closure confers it on itself too.
        const conferred = new Set([...(byNamespace.get(ns) ?? []), ...(tables.conferred.get(ns)?.get(rel) ?? [rel])]);
        byNamespace.set(ns, [...conferred]);
      }
      this.tables.set(schema, tables);
    }
    return tables;
  }

  private nodeOf(ref: Ref): number | undefined {
    const ns = this.namespaceNumbers.get(ref.ns);
    return ns === undefined ? undefined : this.nodesByNs[ns]!.get(ref.id);
  }

  private nodeFor(ref: Ref): number {
    const existing = this.nodeOf(ref);
    if (existing !== undefined) return existing;
    const ns = this.namespaceNumber(ref.ns);
    const node = this.freeNodes.pop() ?? this.nodeNs.length;
    this.nodesByNs[ns]!.set(ref.id, node);
    this.nodeNs[node] = ns;
    this.nodeId[node] = ref.id;
    this.references[node] = 0;
    return node;
  }

  /** One grant naming the node is gone: a node no grant names is forgotten. */
  private release(node: number): void {
    if (--this.references[node]! > 0) return;
    this.nodesByNs[this.nodeNs[node]!]!.delete(this.nodeId[node]!);
    this.nodeId[node] = undefined;
    this.freeNodes.push(node);
  }

  private namespaceNumber(name: string): number {
    let ns = this.namespaceNumbers.get(name);
    if (ns === undefined) {
      ns = this.nodesByNs.length;
      this.namespaceNumbers.set(name, ns);
      this.nodesByNs.push(new Map());
    }
    return ns;
  }

  private relationNumber(name: string): number {
    let relation = this.relationNumbers.get(name);
    if (relation === undefined) this.relationNumbers.set(name, (relation = this.relationNumbers.size));
    return relation;
  }
}

/**
 * The (object, relation) pairs of a walk, in the order visited, each once. Most checks visit a
 * handful, found faster by scanning than by hashing; a long walk switches to a set.
 */
class Walk {
  readonly objects: number[] = [];
  readonly relations: number[] = [];
  private seen: Set<number> | null = null;

  /** `width`: more than the highest relation number, so that a pair's key is `object * width + relation`. */
  constructor(private width: number) {}

  clear(width: number): void {
    this.objects.length = 0;
    this.relations.length = 0;
    this.seen = null;
    this.width = width;
  }

  visit(object: number, relation: number): void {
    if (this.seen === null) {
      for (let i = 0; i < this.objects.length; i++) if (this.objects[i] === object && this.relations[i] === relation) return;
      if (this.objects.length === SCAN_VISITS) this.seen = new Set(this.objects.map((o, i) => o * this.width + this.relations[i]!));
    }
    if (this.seen !== null) {
      const key = object * this.width + relation;
      if (this.seen.has(key)) return;
      this.seen.add(key);
    }
    this.objects.push(object);
    this.relations.push(relation);
  }
}
const SCAN_VISITS = 32;

/**
 * The `limit` smallest of `ids`, ascending. A listing page takes 100 of maybe a million: a bounded
 * max-heap keeps the page so far, and most ids are turned away by one comparison with its top.
 */
function smallest(ids: string[], limit: number): string[] {
  if (ids.length <= 2 * limit) return ids.sort().slice(0, limit);
  const heap: string[] = [];
  for (const id of ids) {
    if (heap.length < limit) {
      heap.push(id);
      for (let i = heap.length - 1, parent = (i - 1) >> 1; i > 0 && heap[parent]! < heap[i]!; i = parent, parent = (i - 1) >> 1) {
        [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      }
    } else if (id < heap[0]!) {
      heap[0] = id;
      for (let i = 0; ; ) {
        const [left, right] = [2 * i + 1, 2 * i + 2];
        let largest = i;
        if (left < limit && heap[left]! > heap[largest]!) largest = left;
        if (right < limit && heap[right]! > heap[largest]!) largest = right;
        if (largest === i) break;
        [heap[largest], heap[i]] = [heap[i]!, heap[largest]!];
        i = largest;
      }
    }
  }
  return heap.sort();
}

function append<V>(map: Map<number, Map<number, V[]>>, ns: number, relation: number, value: V): void {
  let byRelation = map.get(ns);
  if (!byRelation) map.set(ns, (byRelation = new Map()));
  const list = byRelation.get(relation);
  if (list) list.push(value);
  else byRelation.set(relation, [value]);
}
