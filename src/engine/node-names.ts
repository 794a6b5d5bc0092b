import { IdRanks } from './id-ranks.ts';
import { IdTable } from './id-table.ts';
import { EVERY_SUBJECT_ID, MEMBER_RELATION, type Ref } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { schemaTables, type SchemaTables, type TableKeys } from './schema-tables.ts';
import { resized } from './typed-arrays.ts';
import type { UnitsOfWork } from './work-meter.ts';

/**
 * The numbers of a GrantIndex (interning): every subject and object is a node, a small integer, and
 * relations and namespaces are numbered too, so that a check looks its two refs up once (by
 * namespace, then id: no key is built) and then compares integers. A node no grant names any more
 * is forgotten and its number reused, and so are the names of namespaces and relations a tenant
 * stopped using, so that churn does not grow the index. The schemas' tables in these numbers are
 * kept here, since forgetting names renumbers them.
 */
export class NodeNames {
  /** Nodes by namespace number, then id (undefined: a number freed for reuse). */
  readonly nodesByNs: (IdTable | undefined)[] = [];
  private readonly namespaceNumbers = new Map<string, number>();
  /** Per namespace number: its name. */
  private readonly namespaceNames: string[] = [];
  private readonly relationNumbers = new Map<string, number>();
  /** Per relation number: grants held with it. */
  private readonly relationGrants: number[] = [];
  private readonly freeNamespaces: number[] = [];
  private readonly freeRelations: number[] = [];
  /** Namespaces and relations whose last node or grant went: forgotten by the next sweep unless used again. */
  private readonly emptiedNamespaces = new Set<number>();
  private readonly emptiedRelations = new Set<number>();
  /** Per node: its namespace's number, its id, and how many grants name it (typed arrays: no pointers for the collector). */
  nodeNs = new Int32Array(1024);
  nodeId: (string | undefined)[] = [];
  /** The ids' byte order per namespace, as integers: what a listing picks its page by. */
  readonly ranks = new IdRanks(this.nodeNs.length);
  private references = new Int32Array(1024);
  /** Node numbers handed out so far (freed ones are reused first). */
  nodeCount = 0;
  private readonly freeNodes: number[] = [];
  /** The number of the `member` relation, never forgotten: every check reads a subject's groups through it. */
  readonly member = this.relationNumber(MEMBER_RELATION);
  private tables = new WeakMap<CompiledSchema, SchemaTables<number>>();
  /** Names a schema's rows in these numbers, interning them: a relation no grant names may still be held through another. */
  private readonly tableKeys: TableKeys<number> = { namespace: (name) => this.namespaceNumber(name), relation: (name) => this.relationNumber(name) };
  /** Per namespace number: the node of its `*` (public grants' subject), if some grant names it. */
  private readonly wildcardNodes: (number | undefined)[] = [];
  /** Bumped by every change of the nodes named and of the names' numbers. */
  changes = 0;

  /** Namespaces and relations interned: what the names weigh (GrantIndex.footprint). */
  get interned(): number {
    return this.namespaceNumbers.size + this.relationNumbers.size;
  }

  nodeOf(ref: Ref): number | undefined {
    const ns = this.namespaceNumbers.get(ref.ns);
    return ns === undefined ? undefined : this.nodeIn(ns, ref.id);
  }

  /** nodeOf by the namespace's number (namespaceOf): a check's subject, whose namespace's `*` is asked too. */
  nodeIn(ns: number, id: string): number | undefined {
    return this.nodesByNs[ns]!.get(id, this.nodeId);
  }

  /** The node of `<ns>:*`, every subject of the namespace (docs/model.md#public-grants), if some grant names it. */
  wildcardOf(ns: string): number | undefined {
    const number = this.namespaceNumbers.get(ns);
    return number === undefined ? undefined : this.wildcardIn(number);
  }

  /** wildcardOf by the namespace's number (namespaceOf): what a check asks of every subject, with no second lookup of its name. */
  wildcardIn(ns: number): number | undefined {
    return this.wildcardNodes[ns];
  }

  /** The ref's node, numbered now if it has none. */
  nodeFor(ref: Ref): number {
    const existing = this.nodeOf(ref);
    if (existing !== undefined) return existing;
    const ns = this.namespaceNumber(ref.ns);
    const node = this.freeNodes.pop() ?? this.newNode();
    this.nodesByNs[ns]!.add(ref.id, node);
    this.emptiedNamespaces.delete(ns);
    this.nodeNs[node] = ns;
    this.nodeId[node] = ref.id;
    if (ref.id === EVERY_SUBJECT_ID) this.wildcardNodes[ns] = node;
    this.references[node] = 0;
    this.ranks.changed(node, ns);
    this.changes++;
    return node;
  }

  refOf(node: number): Ref {
    return { ns: this.namespaceNames[this.nodeNs[node]!]!, id: this.nodeId[node]! };
  }

  /** The namespace's number; undefined when nothing is named in it. */
  namespaceOf(name: string): number | undefined {
    return this.namespaceNumbers.get(name);
  }

  /** The relation's number; undefined when neither a grant nor a schema's table names it. */
  relationOf(name: string): number | undefined {
    return this.relationNumbers.get(name);
  }

  /** The relation's number, numbered now if it has none. */
  relationNumber(name: string): number {
    let relation = this.relationNumbers.get(name);
    if (relation === undefined) {
      relation = this.freeRelations.pop() ?? this.relationGrants.length;
      this.relationNumbers.set(name, relation);
      this.relationGrants[relation] = 0;
    }
    return relation;
  }

  /** The schema's tables in these numbers, made once per schema (and again after a sweep). */
  tablesOf(schema: CompiledSchema): SchemaTables<number> {
    let tables = this.tables.get(schema);
    if (tables === undefined) {
      tables = schemaTables(schema, this.tableKeys);
      this.tables.set(schema, tables);
    }
    return tables;
  }

  /** One more grant (in the lists or aside) names the nodes and the relation. */
  name(subject: number, relation: number, object: number): void {
    this.references[subject]!++;
    this.references[object]!++;
    if (this.relationGrants[relation]!++ === 0) this.emptiedRelations.delete(relation);
  }

  /** One grant naming the nodes and the relation is gone: what no grant names is forgotten. */
  unname(subject: number, relation: number, object: number): void {
    this.release(subject);
    this.release(object);
    this.relationGrants[relation]! -= 1;
    if (this.relationGrants[relation] === 0 && relation !== this.member) this.emptiedRelations.add(relation);
    if (this.emptiedNamespaces.size + this.emptiedRelations.size > MIN_NAMES_BEFORE_SWEEP) this.sweepNamesIfMostlyUnused();
  }

  /**
   * Packs the per-node arrays to the nodes numbered, and ranks every namespace's ids, so that no
   * listing pays for sorting them (a third of a second for a million ids). Yields between units.
   */
  *compacting(): UnitsOfWork {
    this.nodeNs = this.nodeNs.slice(0, this.nodeCount);
    this.references = this.references.slice(0, this.nodeCount);
    yield;
    this.nodeId = this.nodeId.slice(0, this.nodeCount);
    yield;
    this.ranks.resize(this.nodeCount);
    yield;
    for (const [ns, nodes] of this.nodesByNs.entries()) if (nodes) yield* this.ranks.ranking(ns, nodes, this.nodeId, this.nodeNs);
  }

  /** The ranking of the namespace's ids when a listing in it would rank them again (IdRanks.due), else null. */
  rankingIfDue(namespace: string): UnitsOfWork | null {
    const ns = this.namespaceNumbers.get(namespace);
    const nodes = ns === undefined ? undefined : this.nodesByNs[ns];
    if (ns === undefined || nodes === undefined || !this.ranks.due(ns, nodes)) return null;
    return this.ranks.ranking(ns, nodes, this.nodeId, this.nodeNs);
  }

  private newNode(): number {
    if (this.nodeCount === this.nodeNs.length) {
      // By half: after a compaction the arrays are exactly full, and a new node should not double them.
      const length = this.nodeCount + (this.nodeCount >> 1) + 1024;
      this.nodeNs = resized(this.nodeNs, length, this.nodeCount);
      this.references = resized(this.references, length, this.nodeCount);
      this.ranks.resize(length);
    }
    return this.nodeCount++;
  }

  /** One grant naming the node is gone: a node no grant names is forgotten. */
  private release(node: number): void {
    if (--this.references[node]! > 0) return;
    const nodes = this.nodesByNs[this.nodeNs[node]!]!;
    nodes.delete(this.nodeId[node]!, this.nodeId);
    if (nodes.size === 0) this.emptiedNamespaces.add(this.nodeNs[node]!);
    this.ranks.changed(node, this.nodeNs[node]!);
    if (this.nodeId[node] === EVERY_SUBJECT_ID) this.wildcardNodes[this.nodeNs[node]!] = undefined;
    this.nodeId[node] = undefined;
    this.freeNodes.push(node);
    this.changes++;
  }

  private namespaceNumber(name: string): number {
    let ns = this.namespaceNumbers.get(name);
    if (ns === undefined) {
      ns = this.freeNamespaces.pop() ?? this.nodesByNs.length;
      this.namespaceNumbers.set(name, ns);
      this.namespaceNames[ns] = name;
      this.nodesByNs[ns] = new IdTable();
      this.ranks.renumbered(ns);
    }
    return ns;
  }

  /**
   * Forgets the namespaces no node is in and the relations no grant has, so that names a tenant
   * stopped using do not stay in memory; their numbers are reused. Runs once names that grants
   * stopped using are most of those interned, so its cost is spread over the removals that made
   * them. The schemas' tables name numbers too: they are all made again on their next use.
   */
  private sweepNamesIfMostlyUnused(): void {
    const emptied = this.emptiedNamespaces.size + this.emptiedRelations.size;
    if (2 * emptied <= this.namespaceNumbers.size + this.relationNumbers.size) return;
    for (const [name, ns] of this.namespaceNumbers) {
      if (this.nodesByNs[ns]!.size > 0) continue;
      this.namespaceNumbers.delete(name);
      this.nodesByNs[ns] = undefined;
      this.freeNamespaces.push(ns);
    }
    for (const [name, relation] of this.relationNumbers) {
      if (this.relationGrants[relation]! > 0 || relation === this.member) continue;
      this.relationNumbers.delete(name);
      this.freeRelations.push(relation);
    }
    this.emptiedNamespaces.clear();
    this.emptiedRelations.clear();
    this.tables = new WeakMap();
    this.changes++;
  }
}

/** Unused names tolerated before a sweep is considered: a few hundred KB, fewer than a sweep would cost to repeat. */
const MIN_NAMES_BEFORE_SWEEP = 1024;
