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

/** The nodes on the other side of one (node, relation): an array while few (cheaper to keep), a set once many. */
type Nodes = number[] | Set<number>;
/**
 * When an array of nodes becomes a set. A check asks the object side whether a node is there, so
 * it turns early; the subject side is searched only to remove a grant (the object side has already
 * told whether a grant is new), so it stays an array far longer (measured: ~12 bytes an entry
 * against a set's ~26).
 */
const SET_FROM = { holders: 16, objects: 1024 } as const;

/** One node's grants on one side: each relation's number followed by the nodes on the other side. */
type Grants = Array<number | Nodes>;

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
 * compares integers, which keeps it to a few microseconds on tenants of millions of grants. A node
 * no grant names any more is forgotten and its number reused, so churn does not grow the index.
 */
export class GrantIndex {
  /** Nodes by namespace number, then id. */
  private readonly nodesByNs: Array<Map<string, number>> = [];
  private readonly namespaceNumbers = new Map<string, number>();
  private readonly relationNumbers = new Map<string, number>();
  /** Per node: its namespace's number, the grants on it, the grants it holds, and how many grants name it. */
  private readonly nodeNs: number[] = [];
  private readonly nodeId: Array<string | undefined> = [];
  private readonly grantsOn: Array<Grants | undefined> = [];
  private readonly grantsBy: Array<Grants | undefined> = [];
  private readonly references: number[] = [];
  private readonly freeNodes: number[] = [];
  private readonly member = this.relationNumber(MEMBER_RELATION);
  private readonly tables = new WeakMap<CompiledSchema, SchemaTables>();
  /** The walk of the check under way, reused: a check runs start to end in one go. */
  private readonly walk = new Walk(1);
  /** Grants held. */
  size = 0;

  /** Adds the grant; false when it was already held. */
  add(grant: IndexedGrant): boolean {
    const subject = this.nodeFor(grant.subject);
    const object = this.nodeFor(grant.object);
    const relation = this.relationNumber(grant.relation);
    if (!insert(this.grantsOn, object, relation, subject, SET_FROM.holders)) return false;
    insert(this.grantsBy, subject, relation, object, SET_FROM.objects, { isNew: true });
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
    if (!extract(this.grantsOn, object, relation, subject)) return false;
    extract(this.grantsBy, subject, relation, object);
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
    const groups = this.groupsOf(self);
    const walk = this.walk;
    walk.clear(this.relationNumbers.size);
    for (const implied of this.implied(tables, start, relation)) walk.visit(start, implied);
    for (let depth = 0, from = 0; from < walk.objects.length; depth++) {
      const to = walk.objects.length;
      for (let i = from; i < to; i++) {
        const grants = this.grantsOn[walk.objects[i]!];
        const holders = grants && nodesIn(grants, walk.relations[i]!);
        if (holders !== undefined && holdsAny(holders, self, groups)) return true;
      }
      if (depth === MAX_ARROW_DEPTH) break;
      for (let i = from; i < to; i++) {
        const object = walk.objects[i]!;
        const arrows = tables.arrows.get(this.nodeNs[object]!)?.get(walk.relations[i]!);
        const grants = this.grantsOn[object];
        if (arrows === undefined || grants === undefined) continue;
        for (const arrow of arrows) {
          const related = nodesIn(grants, arrow.via);
          if (related === undefined) continue;
          for (const next of related) {
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
    const groups = this.groupsOf(self);
    for (const holder of groups ? [self, ...groups] : [self]) {
      const held = this.grantsBy[holder];
      for (let i = 0; held !== undefined && i < held.length; i += 2) {
        for (const object of held[i + 1] as Nodes) {
          for (const conferred of this.conferred(tables, object, held[i] as number)) walk.visit(object, conferred);
        }
      }
      if (walk.objects.length > query.budget) return null;
    }
    for (let depth = 0, from = 0; depth < MAX_ARROW_DEPTH && from < walk.objects.length; depth++) {
      const to = walk.objects.length;
      for (let i = from; i < to; i++) {
        const out = this.grantsBy[walk.objects[i]!];
        for (let j = 0; out !== undefined && j < out.length; j += 2) {
          const byNamespace = tables.arrowsOut.get(out[j] as number)?.get(walk.relations[i]!);
          if (byNamespace === undefined) continue;
          for (const object of out[j + 1] as Nodes) {
            const conferred = byNamespace.get(this.nodeNs[object]!);
            if (conferred !== undefined) for (const next of conferred) walk.visit(object, next);
          }
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

  /** The objects the node is a direct member of. */
  private groupsOf(node: number): Nodes | undefined {
    const held = this.grantsBy[node];
    return held && nodesIn(held, this.member);
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

function nodesIn(grants: Grants, relation: number): Nodes | undefined {
  for (let i = 0; i < grants.length; i += 2) if (grants[i] === relation) return grants[i + 1] as Nodes;
  return undefined;
}

/** Adds `other` to `node`'s nodes under `relation` on one side; false when it was there, which `isNew` says it is not. */
function insert(side: Array<Grants | undefined>, node: number, relation: number, other: number, setFrom: number, { isNew = false } = {}): boolean {
  let grants = side[node];
  if (grants === undefined) side[node] = grants = [];
  const nodes = nodesIn(grants, relation);
  if (nodes === undefined) grants.push(relation, [other]);
  else if (Array.isArray(nodes)) {
    if (!isNew && nodes.includes(other)) return false;
    if (nodes.length + 1 < setFrom) nodes.push(other);
    else grants[grants.indexOf(nodes)] = new Set([...nodes, other]);
  } else {
    if (nodes.has(other)) return false;
    nodes.add(other);
  }
  return true;
}

/** Removes `other` from `node`'s nodes under `relation` on one side; false when it was not there. */
function extract(side: Array<Grants | undefined>, node: number, relation: number, other: number): boolean {
  const grants = side[node];
  const nodes = grants && nodesIn(grants, relation);
  if (grants === undefined || nodes === undefined || !without(nodes, other)) return false;
  if ((Array.isArray(nodes) ? nodes.length : nodes.size) === 0) {
    grants.splice(grants.indexOf(nodes) - 1, 2);
    if (grants.length === 0) side[node] = undefined;
  }
  return true;
}

function holdsAny(holders: Nodes, self: number, groups: Nodes | undefined): boolean {
  if (Array.isArray(holders)) {
    if (holders.includes(self)) return true;
    if (groups !== undefined) for (const group of groups) if (holders.includes(group)) return true;
    return false;
  }
  if (holders.has(self)) return true;
  if (groups !== undefined) for (const group of groups) if (holders.has(group)) return true;
  return false;
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

function without<T>(holders: T[] | Set<T>, value: T): boolean {
  if (!Array.isArray(holders)) return holders.delete(value);
  const at = holders.indexOf(value);
  if (at < 0) return false;
  holders[at] = holders[holders.length - 1]!;
  holders.pop();
  return true;
}
