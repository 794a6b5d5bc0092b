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

/** Holders of one (object, relation), as nodes: an array while few (cheaper to keep), a set once many. */
type Holders = number[] | Set<number>;
const SET_FROM = 16;

/** The grants on one object: each relation's number followed by its holders. */
type ObjectGrants = Array<number | Holders>;

/** An arrow in the index's numbers: holders of `target` on an X with a grant (X, `via`, o) hold the relation on o. */
interface Arrow {
  via: number;
  target: number;
}

/** A compiled schema's tables in the index's numbers, by namespace and then relation. */
interface SchemaTables {
  implied: Map<number, Map<number, number[]>>;
  arrows: Map<number, Map<number, Arrow[]>>;
}

/**
 * One tenant's grants in memory, indexed the way a check walks them: from an object to its
 * relations and their holders, and from a subject to the objects it is a direct member of.
 * `check` answers exactly what the store's check statement answers (CHECK_SQL), without a round
 * trip.
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
  /** Per node: its namespace's number, the grants on it, the objects it is a member of, and how many grants name it. */
  private readonly nodeNs: number[] = [];
  private readonly nodeId: Array<string | undefined> = [];
  private readonly grantsOn: Array<ObjectGrants | undefined> = [];
  private readonly groupsOf: Array<number[] | undefined> = [];
  private readonly references: number[] = [];
  private readonly freeNodes: number[] = [];
  private readonly member = this.relationNumber(MEMBER_RELATION);
  private readonly tables = new WeakMap<CompiledSchema, SchemaTables>();
  /** The walk of the check under way, reused: a check runs start to end in one go. */
  private readonly walk = new Walk();
  /** Grants held. */
  size = 0;

  /** Adds the grant; false when it was already held. */
  add(grant: IndexedGrant): boolean {
    const subject = this.nodeFor(grant.subject);
    const object = this.nodeFor(grant.object);
    const relation = this.relationNumber(grant.relation);
    let grants = this.grantsOn[object];
    if (grants === undefined) this.grantsOn[object] = grants = [];
    const holders = holdersIn(grants, relation);
    if (holders === undefined) grants.push(relation, [subject]);
    else if (Array.isArray(holders)) {
      if (holders.includes(subject)) return false;
      if (holders.length + 1 < SET_FROM) holders.push(subject);
      else grants[grants.indexOf(holders)] = new Set([...holders, subject]);
    } else {
      if (holders.has(subject)) return false;
      holders.add(subject);
    }
    if (relation === this.member) {
      const groups = this.groupsOf[subject];
      if (groups) groups.push(object);
      else this.groupsOf[subject] = [object];
    }
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
    const grants = this.grantsOn[object];
    const holders = grants && holdersIn(grants, relation);
    if (grants === undefined || holders === undefined || !without(holders, subject)) return false;
    if ((Array.isArray(holders) ? holders.length : holders.size) === 0) {
      grants.splice(grants.indexOf(holders) - 1, 2);
      if (grants.length === 0) this.grantsOn[object] = undefined;
    }
    if (relation === this.member) {
      const groups = this.groupsOf[subject]!;
      without(groups, object);
      if (groups.length === 0) this.groupsOf[subject] = undefined;
    }
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
    const groups = this.groupsOf[self];
    const walk = this.walk;
    walk.clear();
    for (const implied of this.implied(tables, start, relation)) walk.visit(start, implied);
    for (let depth = 0, from = 0; from < walk.objects.length; depth++) {
      const to = walk.objects.length;
      for (let i = from; i < to; i++) {
        const grants = this.grantsOn[walk.objects[i]!];
        const holders = grants && holdersIn(grants, walk.relations[i]!);
        if (holders !== undefined && holdsAny(holders, self, groups)) return true;
      }
      if (depth === MAX_ARROW_DEPTH) break;
      for (let i = from; i < to; i++) {
        const object = walk.objects[i]!;
        const arrows = tables.arrows.get(this.nodeNs[object]!)?.get(walk.relations[i]!);
        const grants = this.grantsOn[object];
        if (arrows === undefined || grants === undefined) continue;
        for (const arrow of arrows) {
          const related = holdersIn(grants, arrow.via);
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

  /** Relations whose holders hold `relation` on `node`: `relation` itself in an open namespace. */
  private implied(tables: SchemaTables, node: number, relation: number): readonly number[] {
    return tables.implied.get(this.nodeNs[node]!)?.get(relation) ?? [relation];
  }

  /** The schema's tables in this index's numbers, made once per schema. */
  private tablesOf(schema: CompiledSchema): SchemaTables {
    let tables = this.tables.get(schema);
    if (tables === undefined) {
      tables = { implied: new Map(), arrows: new Map() };
      for (const row of schema.closure) {
        append(tables.implied, this.namespaceNumber(row.ns), this.relationNumber(row.rel), this.relationNumber(row.implied));
      }
      for (const row of schema.arrows) {
        const arrow = { via: this.relationNumber(row.via), target: this.relationNumber(row.target) };
        append(tables.arrows, this.namespaceNumber(row.ns), this.relationNumber(row.rel), arrow);
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

function holdersIn(grants: ObjectGrants, relation: number): Holders | undefined {
  for (let i = 0; i < grants.length; i += 2) if (grants[i] === relation) return grants[i + 1] as Holders;
  return undefined;
}

function holdsAny(holders: Holders, self: number, groups: readonly number[] | undefined): boolean {
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
 * The (object, relation) targets of a check, in the order visited, each once. Most walks visit a
 * handful, found faster by scanning than by hashing; a long walk switches to a set.
 */
class Walk {
  readonly objects: number[] = [];
  readonly relations: number[] = [];
  private seen: Set<string> | null = null;

  clear(): void {
    this.objects.length = 0;
    this.relations.length = 0;
    this.seen = null;
  }

  visit(object: number, relation: number): void {
    if (this.seen === null) {
      for (let i = 0; i < this.objects.length; i++) if (this.objects[i] === object && this.relations[i] === relation) return;
      if (this.objects.length === SCAN_VISITS) this.seen = new Set(this.objects.map((o, i) => `${o} ${this.relations[i]}`));
    }
    if (this.seen !== null) {
      const key = `${object} ${relation}`;
      if (this.seen.has(key)) return;
      this.seen.add(key);
    }
    this.objects.push(object);
    this.relations.push(relation);
  }
}
const SCAN_VISITS = 32;

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
