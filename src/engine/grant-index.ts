import type { DomainError } from '../errors.ts';
import { DEFAULT_CHECK_BUDGET } from './budget.ts';
import { BulkChecks, type BulkOptions } from './bulk-checks.ts';
import { CheckWalk, FEW_GROUPS } from './check-walk.ts';
import type { HoldersQuery, ReachableQuery } from './checker.ts';
import { GrantEdges } from './grant-edges.ts';
import type { GrantWindow } from './grant-window.ts';
import { ListingWalks } from './listing-walks.ts';
import { type PlainAnswer, UNDECIDED } from './rule-check.ts';
import { NodeNames } from './node-names.ts';
import type { Ref, Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { drain, inSlices, type Slice, type UnitsOfWork } from './work-meter.ts';
import { NONE } from './none.ts';

/**
 * One tenant's grants in memory (a held tenant's index, src/store/held-tenants.ts). `check` answers
 * exactly what SqlChecker's check statement answers (CHECK_SQL), and `reachable` what SqlListings'
 * listing walk answers (REACHABLE_SQL), without a round trip. In parts, each in its file:
 * - NodeNames numbers every subject and object, relation and namespace, so that a check looks its
 *   two refs up once and then compares integers, which keeps it to a few microseconds on tenants of
 *   millions of grants; it keeps the schemas' tables (schema-tables.ts) in those numbers.
 * - GrantEdges holds the grants as edges both ways, and the grants with a window aside
 *   (WindowedGrants), in the edges only while in force.
 * - CheckWalk walks backwards from the object (a check), BulkChecks runs a bulk's checks with the
 *   walks remembered for its later checks, ListingWalks walks for a listing.
 */
export class GrantIndex {
  private readonly names = new NodeNames();
  private readonly edges = new GrantEdges(this.names);
  private readonly checks = new CheckWalk(this.names, this.edges);
  private readonly bulks = new BulkChecks(this.names, this.edges, this.checks);
  private readonly listings = new ListingWalks(this.names, this.edges, this.checks);

  /**
   * What the index holds in the unit GRANTD_GRAPH_MEMORY counts (a grant): its grants, and the
   * namespace and relation names it has interned, each weighing about as much as NAME_WEIGHT grants.
   */
  get footprint(): number {
    return this.edges.size + WINDOW_WEIGHT * this.edges.windowed.size + NAME_WEIGHT * this.names.interned;
  }

  /** Grants held. */
  get size(): number {
    return this.edges.size;
  }

  /** Bumped by every change of the grants held: what was read of the index holds while it is the same. */
  get version(): number {
    return this.edges.version;
  }

  /** Grants held with a window, in force now or not. */
  get windowedSize(): number {
    return this.edges.windowed.size;
  }

  /** Windows evaluated and boundary-heap levels moved so far: what the windowed grants have cost, in steps (tests bound it). */
  get windowWork(): number {
    return this.edges.windowed.work;
  }

  /** Adds the grant with its window (null: none); false when it was already held so. */
  add(grant: Triple, window: GrantWindow | null = null): boolean {
    return this.edges.add(grant, window);
  }

  /** Removes the grant, whatever its window; false when it was not held. */
  remove(grant: Triple): boolean {
    return this.edges.remove(grant);
  }

  /**
   * Removes the grant with this window if held, else adds it. A logged change flipped the grant (and
   * window) from the state its statement found, so replaying a set of changes this way ends in the
   * same state in any order. A window is replaced by a delete and an insert, so a grant may hold its
   * old and new windows for a moment in a replay, never at its end.
   */
  flip(grant: Triple, window: GrantWindow | null = null): void {
    this.edges.flip(grant, window);
  }

  /**
   * Brings the lists to the windowed grants in force at `now` (epoch ms of the server's clock): a
   * walk then sees exactly the grants in force at that instant. Crosses the window boundaries since
   * the last instant advanced to (or back to it, when the clock stepped back), at most `maxEvents`
   * of them: true when the lists are at `now`; false when boundaries remain, and then no walk may
   * read the lists before a call that returns true.
   */
  advance(now: number, maxEvents = Infinity): boolean {
    return this.edges.windowed.advance(now, maxEvents);
  }

  /**
   * Does the subject, or an object it is a direct member of, hold the relation on the object?
   * (CheckWalk.) Agent scope masks are the caller's (checkAll's `admits`: MemoryChecker's), not the
   * index's. Throws `check-too-complex` past `budget` steps.
   */
  check(schema: CompiledSchema, query: Triple, budget = DEFAULT_CHECK_BUDGET): boolean {
    return this.checks.check(schema, query, budget, null);
  }

  /**
   * The walk of `check` alone, at most `maxDepth` arrows deep, for the rule evaluator (rule-check.ts),
   * which charges its steps (lastCheckSteps) to the check it is part of. Asked to `decide`: UNDECIDED
   * when denied within `maxDepth` arrows while a further one leads to a pair not yet visited.
   */
  checkPlain(schema: CompiledSchema, query: Triple, budget: number, maxDepth: number, decide: boolean): PlainAnswer {
    const held = this.checks.check(schema, query, budget, null, undefined, maxDepth, decide);
    return !held && this.checks.cutShort ? UNDECIDED : held;
  }

  /** The steps the last walk took, when it ended within its budget. */
  get lastCheckSteps(): number {
    return this.checks.steps;
  }

  /**
   * Answers each query as `check` does, an error for one past the budget. Walks are remembered for
   * the call: several checks on one (object, relation) walk it once, and a walk past the budget is
   * not retried for every subject. Gives way at the checkpoints of its `slice` (WorkMeter's: a
   * tenant's slice, which also waits the tenant's turn), so that a bulk of costly checks never holds
   * the event loop longer; a change of the grants meanwhile (a catch-up) voids what was remembered,
   * so that every answer comes from one state of the grants. `admits` (agent masks) is asked right
   * before each check, in the same state: a query it refuses is false.
   */
  async checkAll(
    schema: CompiledSchema,
    queries: readonly Triple[],
    budget = DEFAULT_CHECK_BUDGET,
    options: BulkOptions = {},
  ): Promise<(boolean | DomainError)[]> {
    return this.bulks.checkAll(schema, queries, budget, options);
  }

  /**
   * Ids of `namespace` objects on which the subject, or an object it is a direct member of, holds
   * `relation`: ascending (ids are ASCII, so string order is byte order), after `after`, at most
   * `limit`. Walks forwards from those subjects breadth-first, each (object, relation) once: the
   * relations each grant confers, then arrows out of what is held, at most MAX_ARROW_DEPTH deep.
   * Null when the walk would visit more than `budget` pairs, or read more than `budget` grants (the caller pages some other way).
   */
  reachable(schema: CompiledSchema, query: ReachableQuery): string[] | null {
    return this.listings.reachable(schema, query);
  }

  /**
   * Ids of `namespace` subjects that hold `relation` on the object, themselves or through a group
   * they are a direct member of, and that `admits` lets through (agent masks): ascending, after
   * `after`, at most `limit`. Walks backwards from the object as a check does (no subject to stop
   * at), then reads the holders of every pair and the members of every holder. Null when the walk
   * takes more than `budget` steps, or the pairs, holders and members read come to more than `budget`.
   */
  holders(schema: CompiledSchema, query: HoldersQuery, admits: (id: string) => boolean = () => true): string[] | null {
    return this.listings.holders(schema, query, admits);
  }

  /**
   * The grants on (object, relation) kept aside whose windows are none in force at the instant the
   * lists were last advanced to, each with one of its windows: what explain names as `expired` or
   * `not-yet-valid` (the lists hold only grants in force). In proportion to what it finds.
   */
  outOfForceOn(object: Ref, relation: string): readonly { subject: Ref; window: GrantWindow }[] {
    const node = this.names.nodeOf(object);
    const number = this.names.relationOf(relation);
    if (node === undefined || number === undefined) return NONE;
    const found = this.edges.windowed.outOfForceOn(node, number);
    // Explain asks of every pair it walks, most of which have none: no list is made for them.
    return found.length === 0 ? NONE : found.map(({ subject, window }) => ({ subject: this.names.refOf(subject), window }));
  }

  /** The subject's `member` grants out of force likewise, each with one of its windows. */
  outOfForceMemberships(subject: Ref): { object: Ref; window: GrantWindow }[] {
    const node = this.names.nodeOf(subject);
    if (node === undefined) return [];
    return this.edges.windowed.outOfForceMemberships(node).map(({ object, window }) => ({ object: this.names.refOf(object), window }));
  }

  /** Whether the ref is the subject of a grant out of force likewise. */
  holdsOutOfForce(subject: Ref): boolean {
    const node = this.names.nodeOf(subject);
    return node !== undefined && this.edges.windowed.holdsOutOfForce(node);
  }

  /** Whether the grant is held. */
  holds(grant: Triple): boolean {
    const [subject, object, relation] = [this.names.nodeOf(grant.subject), this.names.nodeOf(grant.object), this.names.relationOf(grant.relation)];
    return subject !== undefined && object !== undefined && relation !== undefined && this.edges.grantsOn.has(object, relation, subject);
  }

  /** Whether some grant names the ref as its subject. */
  isSubject(ref: Ref): boolean {
    const node = this.names.nodeOf(ref);
    return node !== undefined && this.edges.isSubject(node);
  }

  /** The subjects of the grants (subject, relation, object), at most `limit` of them. */
  subjectsOf(object: Ref, relation: string, limit = Infinity): Ref[] {
    const node = this.names.nodeOf(object);
    const number = this.names.relationOf(relation);
    if (node === undefined || number === undefined) return [];
    return this.edges.grantsOn
      .othersWith(node, number, this.checks.related)
      .slice(0, limit)
      .map((n) => this.names.refOf(n));
  }

  /** The X of the grants (X, via, object); null when there are more than `limit`, which are then not read. */
  relatedTo(object: Ref, via: string, limit: number): Ref[] | null {
    const node = this.names.nodeOf(object);
    const number = this.names.relationOf(via);
    if (node === undefined || number === undefined) return [];
    if (this.edges.grantsOn.countWith(node, number) > limit) return null;
    return this.edges.grantsOn.othersWith(node, number, []).map((n) => this.names.refOf(n));
  }

  /** A subject and its groups in this index's numbers, for heldAmong: valid while `version` stays the same. */
  holderNodes(subjectAndGroups: readonly Ref[]): HolderNodes {
    const refs = new Map<number, Ref>();
    for (const ref of subjectAndGroups) {
      const node = this.names.nodeOf(ref);
      if (node !== undefined) refs.set(node, ref);
    }
    const nodes = [...refs.keys()];
    return { nodes, set: subjectAndGroups.length - 1 > FEW_GROUPS ? new Set(nodes) : null, refs };
  }

  /**
   * Those of `holders` that hold `relation` on `object`, and the steps matching them costs a check
   * (CheckWalk's rule: for a subject of more than FEW_GROUPS groups, the smaller of its groups and
   * the pair's holders, which is also the side read here).
   */
  heldAmong(object: Ref, relation: string, holders: HolderNodes): { held: Ref[]; steps: number } {
    const node = this.names.nodeOf(object);
    const number = this.names.relationOf(relation);
    if (node === undefined || number === undefined) return { held: [], steps: 0 };
    const grantsOn = this.edges.grantsOn;
    const count = grantsOn.countWith(node, number);
    const { set, nodes, refs } = holders;
    // Loops rather than filter and map: explain asks this of every pair of a level (thousands).
    const held: Ref[] = [];
    if (set !== null && count < set.size) {
      const others = grantsOn.othersWith(node, number, []);
      for (const holder of others) if (set.has(holder)) held.push(refs.get(holder)!);
    } else {
      for (const holder of nodes) if (grantsOn.has(node, number, holder)) held.push(refs.get(holder)!);
    }
    return { held, steps: set === null ? 0 : Math.min(set.size, count) };
  }

  /** The objects the subject is a direct member of. */
  groupsOfRef(subject: Ref): Ref[] {
    const node = this.names.nodeOf(subject);
    return node === undefined ? [] : this.edges.groupsOf(node, []).map((n) => this.names.refOf(n));
  }

  /**
   * Packs the lists and the per-node arrays to exactly what they hold (EdgeLists.compact): a load
   * calls it once all grants are in, so that a held tenant costs its grants, not the slack of growing.
   * Ranks every namespace's ids too, so that no listing pays for sorting them (a third of a second
   * for a million ids). Yields between units (UnitsOfWork): nothing may change the index until it ends.
   */
  *compacting(): UnitsOfWork {
    yield* this.edges.compacting();
    yield;
    yield* this.names.compacting();
  }

  /** Compacts at once (compacting). */
  compact(): void {
    drain(this.compacting());
  }

  /**
   * Ranks the namespace's ids again if a listing in it would (IdRanks.due), in slices, so that the
   * listing walk after it has no sorting to do; false when the grants changed while it gave way
   * (its work is dropped: the ranks stay as they were).
   */
  async rankInSlices(namespace: string, slice: Slice): Promise<boolean> {
    const ranking = this.names.rankingIfDue(namespace);
    if (ranking === null) return true;
    const version = this.version;
    return inSlices(ranking, slice, () => this.version === version);
  }
}

/** A subject and its groups as an index numbers them (GrantIndex.holderNodes). */
export interface HolderNodes {
  nodes: number[];
  /** The nodes as a set, when the subject has more than FEW_GROUPS groups. */
  set: ReadonlySet<number> | null;
  refs: Map<number, Ref>;
}

/**
 * A grant kept aside with its window costs about this many grants' memory, against 48 bytes a grant at L: its slot, table cell
 * and heap entries (WindowedGrants) weigh 77 bytes more than a plain grant while in force, about 110 more out of force
 * (linked into explain's lists, and no edge in the lists then); measured with 200,000 grants.
 */
export const WINDOW_WEIGHT = 3;
/** A name interned costs about this many grants' memory (its map entries and its namespace's node map). */
const NAME_WEIGHT = 4;
