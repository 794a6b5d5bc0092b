import type { DomainError } from '../errors.ts';
import { DEFAULT_CHECK_BUDGET, isCheckTooComplex, overBudget } from './budget.ts';
import { EdgeLists } from './edge-lists.ts';
import { IdRanks } from './id-ranks.ts';
import { MarkedNodes, type NodeSet } from './marked-nodes.ts';
import type { HoldersQuery, ReachableQuery } from './checker.ts';
import { sameWindow, type GrantWindow } from './grant-window.ts';
import { MEMBER_RELATION, type Ref, type Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { drain, inSlices, WorkMeter, type Slice, type UnitsOfWork } from './work-meter.ts';
import { WindowedGrants } from './windowed-grants.ts';

/** Longest chain of arrows (`T->R`) a check follows (docs/model.md#arrows). */
export const MAX_ARROW_DEPTH = 16;

/**
 * From how many pairs a node's list gets a map to its pairs. A check asks the object side whether
 * a node holds a relation, so it gets one early; the subject side is searched only to remove a
 * grant (the object side has already told whether a grant is new), so it is scanned far longer.
 */
const INDEX_FROM = { holders: 16, objects: 1024 } as const;

/** Arrows through one relation in the index's numbers: holders of a `target` on an X with a grant (X, `via`, o) hold the relation on o. */
interface Arrows {
  via: number;
  targets: number[];
}

/** A compiled schema's tables in the index's numbers. */
interface SchemaTables {
  /** By namespace and relation R: the relations whose holders hold R (a check walks these backwards). */
  implied: Map<number, Map<number, number[]>>;
  /** By namespace and relation: the arrows that confer it, grouped by the relation they go through. */
  arrows: Map<number, Map<number, Arrows[]>>;
  /** By namespace and relation R: the relations that holding R confers (a listing walks these forwards). */
  conferred: Map<number, Map<number, number[]>>;
  /**
   * By the relation held on the object X at the arrow's far end, then by `via`, then by the
   * namespace of o: the relations conferred on o by a grant (X, via, o). A listing looks the
   * relation held up once per pair, and reads X's grants only when some arrow goes out of it.
   */
  arrowsOut: Map<number, Map<number, Map<number, number[]>>>;
}

/**
 * One tenant's grants in memory (a held tenant's index, src/store/held-tenants.ts), indexed both
 * ways: from an object to its relations and their holders (a check walks backwards from the
 * object) and from a subject to its relations and their objects (a listing walks forwards from the
 * subject; its groups are its `member` objects).
 * `check` answers exactly what SqlChecker's check statement answers (CHECK_SQL), and `reachable`
 * what its listing walk answers (REACHABLE_SQL), without a round trip.
 *
 * Every subject and object is a node, a small integer, and relations and namespaces are numbered
 * too: a check looks its two refs up once (by namespace, then id: no key is built) and then
 * compares integers, which keeps it to a few microseconds on tenants of millions of grants. The
 * grants themselves are integers in typed arrays (EdgeLists), which the garbage collector does not
 * trace. A node no grant names any more is forgotten and its number reused, so churn does not grow
 * the index.
 *
 * Grants with a window (docs/model.md#time-bound-grants) are kept aside with their windows
 * (WindowedGrants), and are in the lists above only while in force: the walks never look at a
 * window, so grants without one cost nothing more. `advance` brings the lists to the clock before a
 * walk: each boundary it crosses costs O(log k) for k windowed grants, and no other grant is read.
 */
export class GrantIndex {
  /** Nodes by namespace number, then id (undefined: a number freed for reuse). */
  private readonly nodesByNs: (Map<string, number> | undefined)[] = [];
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
  private nodeNs = new Int32Array(1024);
  private nodeId: (string | undefined)[] = [];
  /** The ids' byte order per namespace, as integers: what a listing picks its page by. */
  private readonly ranks = new IdRanks(this.nodeNs.length);
  private references = new Int32Array(1024);
  /** Node numbers handed out so far (freed ones are reused first). */
  private nodeCount = 0;
  /** Per object node: (relation, holder) pairs. */
  private readonly grantsOn = new EdgeLists(INDEX_FROM.holders);
  /** Per subject node: (relation, object) pairs. */
  private readonly grantsBy = new EdgeLists(INDEX_FROM.objects);
  /**
   * Per subject node: its `member` pairs again, so that finding a subject's groups, which every
   * check does, reads those alone and not all the subject's grants (hundreds for a user at L).
   */
  private readonly memberships = new EdgeLists(INDEX_FROM.objects);
  private readonly freeNodes: number[] = [];
  private readonly member = this.relationNumber(MEMBER_RELATION);
  private tables = new WeakMap<CompiledSchema, SchemaTables>();
  /** The walk, the subject's groups and an arrow's related objects of the check under way, reused: a check runs start to end in one go. */
  private readonly walk = new Walk();
  private readonly groups: number[] = [];
  private readonly subjectAndGroups = new MarkedNodes();
  private readonly related: number[] = [];
  /** A listing's ids after the cursor, as nodes, reused likewise. */
  private readonly found: number[] = [];
  /** How many pairs of the walk under way have been matched against the subject. */
  private matched = 0;
  /** Grants held. */
  size = 0;
  /** Bumped by every change of the grants held and of the nodes named: what a walk or a ranking read is valid for one version. */
  private changes = 0;
  /**
   * The grants with a window, with their windows: usually one a grant, but a catch-up may hold a
   * grant's old and new windows for a moment (see flip); null there is the grant without a window.
   * Their edges are in the lists while one of their windows is in force at the instant advanced to.
   */
  private readonly windowed = new WindowedGrants(this.member, (subject, relation, object, held) => this.holdEdge(subject, relation, object, held));

  /**
   * What the index holds in the unit GRANTD_GRAPH_MEMORY counts (a grant): its grants, and the
   * namespace and relation names it has interned, each weighing about as much as NAME_WEIGHT grants.
   */
  get footprint(): number {
    return this.size + WINDOW_WEIGHT * this.windowed.size + NAME_WEIGHT * (this.namespaceNumbers.size + this.relationNumbers.size);
  }

  /** Bumped by every change of the grants held: what was read of the index holds while it is the same. */
  get version(): number {
    return this.changes;
  }

  /** Grants held with a window, in force now or not. */
  get windowedSize(): number {
    return this.windowed.size;
  }

  /** Windows evaluated and boundary-heap levels moved so far: what the windowed grants have cost, in steps (tests bound it). */
  get windowWork(): number {
    return this.windowed.work;
  }

  /** Adds the grant with its window (null: none); false when it was already held so. */
  add(grant: Triple, window: GrantWindow | null = null): boolean {
    const subject = this.nodeFor(grant.subject);
    const object = this.nodeFor(grant.object);
    const relation = this.relationNumber(grant.relation);
    const aside = this.windowed.windowsOf(subject, relation, object);
    if (window === null && aside === undefined) return this.addEdge(subject, relation, object);
    const windows = aside ?? this.plainWindows(subject, relation, object);
    if (windows.some((held) => sameWindow(held, window))) return false;
    this.setWindows(subject, relation, object, [...windows, window]);
    return true;
  }

  /** Removes the grant, whatever its window; false when it was not held. */
  remove(grant: Triple): boolean {
    const subject = this.nodeOf(grant.subject);
    const object = this.nodeOf(grant.object);
    const relation = this.relationNumbers.get(grant.relation);
    if (subject === undefined || object === undefined || relation === undefined) return false;
    if (!this.windowed.holds(subject, relation, object)) return this.removeEdge(subject, relation, object);
    this.setWindows(subject, relation, object, []);
    return true;
  }

  /**
   * Removes the grant with this window if held, else adds it. A logged change flipped the grant (and
   * window) from the state its statement found, so replaying a set of changes this way ends in the
   * same state in any order. A window is replaced by a delete and an insert, so a grant may hold its
   * old and new windows for a moment in a replay, never at its end.
   */
  flip(grant: Triple, window: GrantWindow | null = null): void {
    const subject = this.nodeFor(grant.subject);
    const object = this.nodeFor(grant.object);
    const relation = this.relationNumber(grant.relation);
    const aside = this.windowed.windowsOf(subject, relation, object);
    if (window === null && aside === undefined) {
      if (!this.removeEdge(subject, relation, object)) this.addEdge(subject, relation, object);
      return;
    }
    const windows = aside ?? this.plainWindows(subject, relation, object);
    const at = windows.findIndex((held) => sameWindow(held, window));
    this.setWindows(subject, relation, object, at >= 0 ? windows.filter((_, i) => i !== at) : [...windows, window]);
  }

  /**
   * Brings the lists to the windowed grants in force at `now` (epoch ms of the server's clock): a
   * walk then sees exactly the grants in force at that instant. Crosses the window boundaries since
   * the last instant advanced to (or back to it, when the clock stepped back), at most `maxEvents`
   * of them: true when the lists are at `now`; false when boundaries remain, and then no walk may
   * read the lists before a call that returns true.
   */
  advance(now: number, maxEvents = Infinity): boolean {
    return this.windowed.advance(now, maxEvents);
  }

  /** The windows of a grant not kept aside: none, or the one of a grant without a window. */
  private plainWindows(subject: number, relation: number, object: number): (GrantWindow | null)[] {
    return this.grantsOn.has(object, relation, subject) ? [null] : [];
  }

  /**
   * Holds the grant with these windows, its edge in the lists while one is in force. A grant aside
   * names its nodes and relation as a grant in the lists does, so that they keep their numbers
   * while it is out of force.
   */
  private setWindows(subject: number, relation: number, object: number, windows: (GrantWindow | null)[]): void {
    const wasAside = this.windowed.holds(subject, relation, object);
    const aside = !(windows.length === 0 || (windows.length === 1 && windows[0] === null));
    // Not aside: the grant without a window (held) or none.
    let held = windows.length > 0;
    if (aside) held = this.windowed.set(subject, relation, object, windows);
    else this.windowed.delete(subject, relation, object);
    if (aside && !wasAside) this.name(subject, relation, object);
    this.holdEdge(subject, relation, object, held);
    if (wasAside && !aside) this.unname(subject, relation, object);
  }

  private holdEdge(subject: number, relation: number, object: number, held: boolean): void {
    if (held) this.addEdge(subject, relation, object);
    else this.removeEdge(subject, relation, object);
  }

  /** Puts the grant in the lists; false when it was there. */
  private addEdge(subject: number, relation: number, object: number): boolean {
    if (this.grantsOn.has(object, relation, subject)) return false;
    this.grantsOn.add(object, relation, subject);
    this.grantsBy.add(subject, relation, object);
    if (relation === this.member) this.memberships.add(subject, relation, object);
    this.name(subject, relation, object);
    this.size++;
    this.changes++;
    return true;
  }

  /** Takes the grant out of the lists; false when it was not there. */
  private removeEdge(subject: number, relation: number, object: number): boolean {
    if (!this.grantsOn.remove(object, relation, subject)) return false;
    this.grantsBy.remove(subject, relation, object);
    if (relation === this.member) this.memberships.remove(subject, relation, object);
    this.unname(subject, relation, object);
    this.size--;
    this.changes++;
    return true;
  }

  /** One more grant (in the lists or aside) names the nodes and the relation. */
  private name(subject: number, relation: number, object: number): void {
    this.references[subject]!++;
    this.references[object]!++;
    if (this.relationGrants[relation]!++ === 0) this.emptiedRelations.delete(relation);
  }

  /** One grant naming the nodes and the relation is gone: what no grant names is forgotten. */
  private unname(subject: number, relation: number, object: number): void {
    this.release(subject);
    this.release(object);
    this.relationGrants[relation]! -= 1;
    if (this.relationGrants[relation] === 0 && relation !== this.member) this.emptiedRelations.add(relation);
    if (this.emptiedNamespaces.size + this.emptiedRelations.size > MIN_NAMES_BEFORE_SWEEP) this.sweepNamesIfMostlyUnused();
  }

  /**
   * Does the subject, or an object it is a direct member of, hold the relation on the object?
   * Walks backwards from the object breadth-first: the relations that imply the checked one, then
   * through arrows to related objects, at most MAX_ARROW_DEPTH arrows deep. Agent scope masks are
   * the caller's (checkAll's `admits`: MemoryChecker's), not the index's. Throws
   * `check-too-complex` past `budget` steps.
   */
  check(schema: CompiledSchema, query: Triple, budget = DEFAULT_CHECK_BUDGET): boolean {
    return this.checkRemembering(schema, query, budget, null);
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
    { admits = () => true, slice = WorkMeter.unmetered() }: { admits?: (query: Triple) => boolean; slice?: Slice } = {},
  ): Promise<(boolean | DomainError)[]> {
    const answers = new Array<boolean | DomainError>(queries.length);
    // Each query's object node and relation number, looked up once: the key of its walk, and the
    // walk's start until the bulk first gives way (a catch-up meanwhile may renumber nodes). The
    // schema's relations are numbered first, as for one check: one no grant names may still be held.
    this.tablesOf(schema);
    const targets: (WalkTarget | undefined)[] = queries.map((query) => this.targetOf(query));
    // A lone check has no later check to keep a walk for.
    const walks =
      queries.length > 1
        ? new RememberedWalks(
            targets.map((target) => walkKey(target!)),
            budget,
          )
        : null;
    let version = this.changes;
    for (let i = 0; i < queries.length; i++) {
      if (slice.due()) {
        targets.fill(undefined);
        await slice.pause();
      }
      if (version !== this.changes) {
        walks?.forget();
        version = this.changes;
      }
      walks?.next();
      try {
        answers[i] = admits(queries[i]!) && this.checkRemembering(schema, queries[i]!, budget, walks, targets[i]);
      } catch (error) {
        if (!isCheckTooComplex(error)) throw error;
        answers[i] = error;
      }
    }
    return answers;
  }

  /** `target`: the query's targetOf, when read in this turn of the event loop (the grants' present state). */
  private checkRemembering(
    schema: CompiledSchema,
    query: Triple,
    budget: number,
    walks: RememberedWalks | null,
    target: WalkTarget | undefined = undefined,
  ): boolean {
    // Numbers the schema's relations first: one that no grant names may still be held through another.
    const tables = this.tablesOf(schema);
    // A subject that holds no grant (so has no group) holds nothing; a relation neither a grant nor the schema names, no one holds.
    const self = this.nodeOf(query.subject);
    const { start, relation } = target ?? this.targetOf(query);
    if (self === undefined || start === undefined || relation === undefined) return false;
    if (this.grantsBy.from(self) === this.grantsBy.to(self)) return false;
    const groups = this.groupsOf(self, this.groups);
    // The bulk's key for this check, taken when the bulk began (node numbers may change in a catch-up meanwhile).
    const key = walks?.current() ?? null;
    const remembered = key === null ? undefined : walks!.get(key);
    const answer = remembered === undefined ? undefined : this.heldOnAny(remembered, self, groups, budget);
    if (answer !== undefined) return answer;
    const walk = this.walk;
    try {
      const allowed = this.walkBackwards(tables, start, relation, self, groups, budget);
      // A walk that found the subject stopped early: only a finished one serves other subjects.
      if (!allowed && key !== null) walks!.remember(key, walk, walk.objects.length, true);
      return allowed;
    } catch (error) {
      // Only the pairs matched before the budget ran out: the rest were never looked at.
      if (isCheckTooComplex(error) && key !== null) walks!.remember(key, walk, this.matched, false);
      throw error;
    }
  }

  /**
   * The walk of `check`, into `this.walk`; throws once it has taken more than `budget` steps. Steps
   * are the subject's groups, the pairs of each level expanded and the grants read from them through
   * arrows, as grantd_check_walk counts them; and, for a subject of more than FEW_GROUPS groups, the
   * smaller of its groups and each pair's holders, which matching them costs here.
   */
  private walkBackwards(tables: SchemaTables, start: number, relation: number, self: number, groups: number[], budget: number): boolean {
    const walk = this.walk;
    walk.clear();
    for (const implied of this.implied(tables, start, relation)) walk.visit(start, implied);
    const grantsOn = this.grantsOn;
    const many = this.manyGroups(self, groups);
    let steps = groups.length;
    this.matched = 0;
    for (let depth = 0, from = 0; from < walk.objects.length; depth++) {
      const to = walk.objects.length;
      for (let i = from; i < to; i++) {
        const object = walk.objects[i]!;
        const held = walk.relations[i]!;
        if (many !== null) {
          steps += Math.min(many.size, grantsOn.countWith(object, held));
          if (steps > budget) throw overBudget(budget);
        }
        if (this.heldBy(object, held, self, groups, many)) return true;
      }
      this.matched = to;
      walk.levelEnds.push(to);
      walk.levelCosts.push(UNKNOWN_COST);
      if (depth === MAX_ARROW_DEPTH) {
        walk.levelCosts[depth] = LAST_LEVEL;
        break;
      }
      const before = steps;
      steps += to - from;
      // The level's reads are counted before any is followed: no pair is matched before the next
      // level, so a level that takes the check past its budget is refused whole, before its visits.
      for (let i = from; i < to && steps <= budget; i++) {
        const object = walk.objects[i]!;
        for (const { via } of tables.arrows.get(this.nodeNs[object]!)?.get(walk.relations[i]!) ?? NO_ARROWS) steps += grantsOn.countWith(object, via);
      }
      if (steps > budget) throw overBudget(budget);
      walk.levelCosts[depth] = steps - before;
      for (let i = from; i < to; i++) {
        const object = walk.objects[i]!;
        const arrows = tables.arrows.get(this.nodeNs[object]!)?.get(walk.relations[i]!);
        if (arrows === undefined) continue;
        for (const { via, targets } of arrows) {
          const related = grantsOn.othersWith(object, via, this.related);
          for (const next of related) {
            for (const target of targets) for (const implied of this.implied(tables, next, target)) walk.visit(next, implied);
          }
        }
      }
      from = to;
    }
    return false;
  }

  /**
   * The answer the check of another subject would give on a remembered walk: its levels matched
   * against this subject and charged as walkBackwards charges them (this subject's groups and their
   * matching, then each level's cost), so that a bulk answers each item exactly as its single check.
   * Undefined when the remembered walk ends before the answer does (the budget stopped it for its
   * own subject): then this subject's check walks afresh.
   */
  private heldOnAny(walk: RememberedWalk, self: number, groups: number[], budget: number): boolean | undefined {
    const many = this.manyGroups(self, groups);
    const grantsOn = this.grantsOn;
    let steps = groups.length;
    for (let level = 0, from = 0; level < walk.levelEnds.length; level++) {
      const to = walk.levelEnds[level]!;
      for (let i = from; i < to; i++) {
        if (many !== null) {
          steps += Math.min(many.size, grantsOn.countWith(walk.objects[i]!, walk.relations[i]!));
          if (steps > budget) throw overBudget(budget);
        }
        if (this.heldBy(walk.objects[i]!, walk.relations[i]!, self, groups, many)) return true;
      }
      const cost = walk.levelCosts[level]!;
      if (cost === LAST_LEVEL) return false;
      if (cost === UNKNOWN_COST) return undefined;
      steps += cost;
      if (steps > budget) throw overBudget(budget);
      from = to;
    }
    return walk.finished ? false : undefined;
  }

  /** The subject and its groups as a set, when they are more than FEW_GROUPS: matching them goes through it. */
  private manyGroups(self: number, groups: readonly number[]): NodeSet | null {
    return groups.length > FEW_GROUPS ? this.subjectAndGroups.mark(self, groups, this.nodeCount) : null;
  }

  /** Whether the subject or one of its groups holds `relation` on `object`; `many`: them as a set (manyGroups), when there are many. */
  private heldBy(object: number, relation: number, self: number, groups: number[], many: NodeSet | null): boolean {
    return many === null ? this.grantsOn.hasAny(object, relation, self, groups) : this.grantsOn.hasAnyOf(object, relation, many);
  }

  /** Where a query's walk starts: its object's node and its relation's number (undefined: none, so nothing to walk). */
  private targetOf(query: Triple): WalkTarget {
    return { start: this.nodeOf(query.object), relation: this.relationNumbers.get(query.relation) };
  }

  /**
   * Ids of `namespace` objects on which the subject, or an object it is a direct member of, holds
   * `relation`: ascending (ids are ASCII, so string order is byte order), after `after`, at most
   * `limit`. Walks forwards from those subjects breadth-first, each (object, relation) once: the
   * relations each grant confers, then arrows out of what is held, at most MAX_ARROW_DEPTH deep.
   * Null when the walk would visit more than `budget` pairs, or read more than `budget` grants (the caller pages some other way).
   */
  reachable(schema: CompiledSchema, query: ReachableQuery): string[] | null {
    const tables = this.tablesOf(schema);
    const self = this.nodeOf(query.subject);
    const namespace = this.namespaceNumbers.get(query.namespace);
    const relation = this.relationNumbers.get(query.relation);
    if (self === undefined || namespace === undefined || relation === undefined) return [];
    // Nothing else walks meanwhile: a listing walk runs start to end in one go, as a check does.
    const walk = this.walk;
    walk.clear();
    // Nothing is added during a walk, so the arena stays where it is.
    const grantsBy = this.grantsBy;
    const pairs = grantsBy.arena;
    // The budget bounds the grants read as well as the pairs found: a node of many grants costs its reading.
    let read = 0;
    for (const holder of [self, ...this.groupsOf(self, [])]) {
      read += (grantsBy.to(holder) - grantsBy.from(holder)) / 2;
      for (let i = grantsBy.from(holder), end = grantsBy.to(holder); i < end; i += 2) {
        const object = pairs[i + 1]!;
        for (const conferred of this.conferred(tables, object, pairs[i]!)) walk.visit(object, conferred);
      }
      if (Math.max(walk.objects.length, read) > query.budget) return null;
    }
    for (let depth = 0, from = 0; depth < MAX_ARROW_DEPTH && from < walk.objects.length; depth++) {
      const to = walk.objects.length;
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
            if (this.nodeNs[object] !== ns) [ns, conferred] = [this.nodeNs[object]!, byNamespace.get(this.nodeNs[object]!)];
            if (conferred !== undefined) for (const next of conferred) walk.visit(object, next);
          }
        }
        if (Math.max(walk.objects.length, read) > query.budget) return null;
      }
      from = to;
    }
    const [ids, after] = [this.nodeId, query.after];
    this.ranks.refresh(namespace, this.nodesByNs[namespace]!, ids, this.nodeNs);
    const above = after === null ? 0 : this.ranks.firstAbove(namespace, after, ids, this.nodeNs);
    const found = this.found;
    found.length = 0;
    for (let i = 0; i < walk.objects.length; i++) {
      const object = walk.objects[i]!;
      if (walk.relations[i] !== relation || this.nodeNs[object] !== namespace) continue;
      if (after === null || this.ranks.isAbove(object, after, above, ids)) found.push(object);
    }
    return this.ranks.smallest(namespace, found, query.limit, ids);
  }

  /**
   * Ids of `namespace` subjects that hold `relation` on the object, themselves or through a group
   * they are a direct member of, and that `admits` lets through (agent masks): ascending, after
   * `after`, at most `limit`. Walks backwards from the object as a check does (no subject to stop
   * at), then reads the holders of every pair and the members of every holder. Null when the walk
   * takes more than `budget` steps, or the pairs, holders and members read come to more than `budget`.
   */
  holders(schema: CompiledSchema, query: HoldersQuery, admits: (id: string) => boolean = () => true): string[] | null {
    const tables = this.tablesOf(schema);
    const start = this.nodeOf(query.object);
    const relation = this.relationNumbers.get(query.relation);
    const namespace = this.namespaceNumbers.get(query.namespace);
    if (start === undefined || relation === undefined || namespace === undefined) return [];
    try {
      this.walkBackwards(tables, start, relation, NO_NODE, [], query.budget);
    } catch (error) {
      if (isCheckTooComplex(error)) return null;
      throw error;
    }
    const walk = this.walk;
    let read = walk.objects.length;
    const expanded = new Set<number>();
    const [ids, after] = [this.nodeId, query.after];
    this.ranks.refresh(namespace, this.nodesByNs[namespace]!, ids, this.nodeNs);
    const above = after === null ? 0 : this.ranks.firstAbove(namespace, after, ids, this.nodeNs);
    const found = new Set<number>();
    const members: number[] = [];
    const take = (node: number) => {
      if (this.nodeNs[node] !== namespace) return;
      if ((after === null || this.ranks.isAbove(node, after, above, ids)) && admits(ids[node]!)) found.add(node);
    };
    for (let i = 0; i < walk.objects.length; i++) {
      for (const holder of this.grantsOn.othersWith(walk.objects[i]!, walk.relations[i]!, this.related)) {
        take(holder);
        if (expanded.has(holder)) continue;
        expanded.add(holder);
        read += 1 + this.grantsOn.countWith(holder, this.member);
        if (read > query.budget) return null;
        for (const member of this.grantsOn.othersWith(holder, this.member, members)) take(member);
      }
    }
    return this.ranks.smallest(namespace, [...found], query.limit, ids);
  }

  /**
   * The grants on (object, relation) kept aside whose windows are none in force at the instant the
   * lists were last advanced to, each with one of its windows: what explain names as `expired` or
   * `not-yet-valid` (the lists hold only grants in force). In proportion to what it finds.
   */
  outOfForceOn(object: Ref, relation: string): { subject: Ref; window: GrantWindow }[] {
    const node = this.nodeOf(object);
    const number = this.relationNumbers.get(relation);
    if (node === undefined || number === undefined) return [];
    return this.windowed.outOfForceOn(node, number).map(({ subject, window }) => ({ subject: this.refOf(subject), window }));
  }

  /** The subject's `member` grants out of force likewise, each with one of its windows. */
  outOfForceMemberships(subject: Ref): { object: Ref; window: GrantWindow }[] {
    const node = this.nodeOf(subject);
    if (node === undefined) return [];
    return this.windowed.outOfForceMemberships(node).map(({ object, window }) => ({ object: this.refOf(object), window }));
  }

  /** Whether the ref is the subject of a grant out of force likewise. */
  holdsOutOfForce(subject: Ref): boolean {
    const node = this.nodeOf(subject);
    return node !== undefined && this.windowed.holdsOutOfForce(node);
  }

  /** Whether the grant is held. */
  holds(grant: Triple): boolean {
    const [subject, object, relation] = [this.nodeOf(grant.subject), this.nodeOf(grant.object), this.relationNumbers.get(grant.relation)];
    return subject !== undefined && object !== undefined && relation !== undefined && this.grantsOn.has(object, relation, subject);
  }

  /** Whether some grant names the ref as its subject. */
  isSubject(ref: Ref): boolean {
    const node = this.nodeOf(ref);
    return node !== undefined && this.grantsBy.from(node) !== this.grantsBy.to(node);
  }

  /** The subjects of the grants (subject, relation, object), at most `limit` of them. */
  subjectsOf(object: Ref, relation: string, limit = Infinity): Ref[] {
    const node = this.nodeOf(object);
    const number = this.relationNumbers.get(relation);
    if (node === undefined || number === undefined) return [];
    return this.grantsOn
      .othersWith(node, number, this.related)
      .slice(0, limit)
      .map((n) => this.refOf(n));
  }

  /** A subject and its groups in this index's numbers, for heldAmong: valid while `version` stays the same. */
  holderNodes(subjectAndGroups: readonly Ref[]): HolderNodes {
    const refs = new Map<number, Ref>();
    for (const ref of subjectAndGroups) {
      const node = this.nodeOf(ref);
      if (node !== undefined) refs.set(node, ref);
    }
    const nodes = [...refs.keys()];
    return { nodes, set: subjectAndGroups.length - 1 > FEW_GROUPS ? new Set(nodes) : null, refs };
  }

  /**
   * Those of `holders` that hold `relation` on `object`, and the steps matching them costs a check
   * (walkBackwards's rule: for a subject of more than FEW_GROUPS groups, the smaller of its groups
   * and the pair's holders, which is also the side read here).
   */
  heldAmong(object: Ref, relation: string, holders: HolderNodes): { held: Ref[]; steps: number } {
    const node = this.nodeOf(object);
    const number = this.relationNumbers.get(relation);
    if (node === undefined || number === undefined) return { held: [], steps: 0 };
    const count = this.grantsOn.countWith(node, number);
    const { set, nodes, refs } = holders;
    const has = (holder: number) => this.grantsOn.has(node, number, holder);
    const held =
      set !== null && count < set.size ? this.grantsOn.othersWith(node, number, []).filter((holder) => set.has(holder)) : nodes.filter(has);
    return { held: held.map((holder) => refs.get(holder)!), steps: set === null ? 0 : Math.min(set.size, count) };
  }

  /** The objects the subject is a direct member of. */
  groupsOfRef(subject: Ref): Ref[] {
    const node = this.nodeOf(subject);
    return node === undefined ? [] : this.groupsOf(node, []).map((n) => this.refOf(n));
  }

  private refOf(node: number): Ref {
    return { ns: this.namespaceNames[this.nodeNs[node]!]!, id: this.nodeId[node]! };
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
      const arrowsOut = new Map<number, Map<number, Map<number, Set<number>>>>();
      for (const row of schema.arrows) {
        const [ns, rel, via, target] = [
          this.namespaceNumber(row.ns),
          this.relationNumber(row.rel),
          this.relationNumber(row.via),
          this.relationNumber(row.target),
        ];
        const throughVia = tables.arrows
          .get(ns)
          ?.get(rel)
          ?.find((arrows) => arrows.via === via);
        if (throughVia) throughVia.targets.push(target);
        else append(tables.arrows, ns, rel, { via, targets: [target] });
        let byVia = arrowsOut.get(target);
        if (!byVia) arrowsOut.set(target, (byVia = new Map<number, Map<number, Set<number>>>()));
        let byNamespace = byVia.get(via);
        if (!byNamespace) byVia.set(via, (byNamespace = new Map<number, Set<number>>()));
        let conferred = byNamespace.get(ns);
        if (!conferred) byNamespace.set(ns, (conferred = new Set<number>()));
        // An arrow's relation is declared, so the closure confers it on itself too.
        for (const relation of tables.conferred.get(ns)?.get(rel) ?? [rel]) conferred.add(relation);
      }
      // Gathered in sets (a model at the limits has thousands of arrows), kept as arrays: what a listing reads.
      for (const [target, byVia] of arrowsOut) {
        tables.arrowsOut.set(
          target,
          new Map([...byVia].map(([via, byNamespace]) => [via, new Map([...byNamespace].map(([ns, set]) => [ns, [...set]]))])),
        );
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
    const node = this.freeNodes.pop() ?? this.newNode();
    this.nodesByNs[ns]!.set(ref.id, node);
    this.emptiedNamespaces.delete(ns);
    this.nodeNs[node] = ns;
    this.nodeId[node] = ref.id;
    this.references[node] = 0;
    this.ranks.changed(node, ns);
    this.changes++;
    return node;
  }

  private newNode(): number {
    if (this.nodeCount === this.nodeNs.length) {
      // By half: after a compaction the arrays are exactly full, and a new node should not double them.
      const length = this.nodeCount + (this.nodeCount >> 1) + 1024;
      this.nodeNs = grown(this.nodeNs, length);
      this.references = grown(this.references, length);
      this.ranks.resize(length);
    }
    return this.nodeCount++;
  }

  /**
   * Packs the lists and the per-node arrays to exactly what they hold (EdgeLists.compact): a load
   * calls it once all grants are in, so that a held tenant costs its grants, not the slack of growing.
   * Ranks every namespace's ids too, so that no listing pays for sorting them (a third of a second
   * for a million ids). Yields between units (UnitsOfWork): nothing may change the index until it ends.
   */
  *compacting(): UnitsOfWork {
    yield* this.grantsOn.compacting();
    yield* this.grantsBy.compacting();
    yield* this.memberships.compacting();
    this.windowed.compact();
    yield;
    this.nodeNs = this.nodeNs.slice(0, this.nodeCount);
    this.references = this.references.slice(0, this.nodeCount);
    yield;
    this.nodeId = this.nodeId.slice(0, this.nodeCount);
    yield;
    this.ranks.resize(this.nodeCount);
    yield;
    for (const [ns, nodes] of this.nodesByNs.entries()) if (nodes) yield* this.ranks.ranking(ns, nodes, this.nodeId, this.nodeNs);
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
    const ns = this.namespaceNumbers.get(namespace);
    const nodes = ns === undefined ? undefined : this.nodesByNs[ns];
    if (ns === undefined || nodes === undefined || !this.ranks.due(ns, nodes)) return true;
    const version = this.changes;
    return inSlices(this.ranks.ranking(ns, nodes, this.nodeId, this.nodeNs), slice, () => this.changes === version);
  }

  /** One grant naming the node is gone: a node no grant names is forgotten. */
  private release(node: number): void {
    if (--this.references[node]! > 0) return;
    const nodes = this.nodesByNs[this.nodeNs[node]!]!;
    nodes.delete(this.nodeId[node]!);
    if (nodes.size === 0) this.emptiedNamespaces.add(this.nodeNs[node]!);
    this.ranks.changed(node, this.nodeNs[node]!);
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
      this.nodesByNs[ns] = new Map();
      this.ranks.renumbered(ns);
    }
    return ns;
  }

  private relationNumber(name: string): number {
    let relation = this.relationNumbers.get(name);
    if (relation === undefined) {
      relation = this.freeRelations.pop() ?? this.relationGrants.length;
      this.relationNumbers.set(name, relation);
      this.relationGrants[relation] = 0;
    }
    return relation;
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

/**
 * The (object, relation) pairs of a walk, in the order visited, each once. Most checks visit a
 * handful, found faster by scanning than by hashing; a long walk (a listing's: tens of thousands)
 * switches to an open-addressing table of typed arrays, kept from walk to walk and stamped with
 * the walk's number, so that it is neither cleared nor allocated again, and holds no object.
 */
class Walk {
  readonly objects: number[] = [];
  readonly relations: number[] = [];
  /** Per level of a check's walk: the end of its pairs, and the steps reading it took (UNKNOWN_COST, LAST_LEVEL). */
  readonly levelEnds: number[] = [];
  readonly levelCosts: number[] = [];
  private hashed = false;
  /** Per slot: the pair's object and relation, and the number of the walk that put it there. */
  private slotObject = new Int32Array(0);
  private slotRelation = new Int32Array(0);
  private slotWalk = new Int32Array(0);
  private walkNumber = 0;

  clear(): void {
    this.objects.length = 0;
    this.relations.length = 0;
    this.levelEnds.length = 0;
    this.levelCosts.length = 0;
    this.hashed = false;
    // A very long walk's table is let go rather than kept for all walks after it.
    if (this.slotWalk.length > MAX_KEPT_SLOTS) this.resize(0);
    if (++this.walkNumber === 0x7fffffff) {
      this.walkNumber = 1;
      this.slotWalk.fill(0);
    }
  }

  visit(object: number, relation: number): void {
    if (!this.hashed) {
      for (let i = 0; i < this.objects.length; i++) if (this.objects[i] === object && this.relations[i] === relation) return;
      if (this.objects.length === SCAN_VISITS) {
        this.hashed = true;
        this.resize(Math.max(this.slotWalk.length, 4 * SCAN_VISITS));
        for (let i = 0; i < this.objects.length; i++) this.put(this.objects[i]!, this.relations[i]!);
      }
    }
    if (this.hashed) {
      // Kept under half full, so that probes stay short.
      if (2 * (this.objects.length + 1) > this.slotWalk.length) this.rehash(2 * this.slotWalk.length);
      if (!this.put(object, relation)) return;
    }
    this.objects.push(object);
    this.relations.push(relation);
  }

  /** Puts the pair in the table; false when it was there. */
  private put(object: number, relation: number): boolean {
    const mask = this.slotWalk.length - 1;
    for (let slot = (Math.imul(object, 0x9e3779b1) ^ Math.imul(relation, 0x85ebca6b)) & mask; ; slot = (slot + 1) & mask) {
      if (this.slotWalk[slot] !== this.walkNumber) {
        this.slotWalk[slot] = this.walkNumber;
        this.slotObject[slot] = object;
        this.slotRelation[slot] = relation;
        return true;
      }
      if (this.slotObject[slot] === object && this.slotRelation[slot] === relation) return false;
    }
  }

  private rehash(slots: number): void {
    this.resize(slots);
    for (let i = 0; i < this.objects.length; i++) this.put(this.objects[i]!, this.relations[i]!);
  }

  private resize(slots: number): void {
    if (slots === this.slotWalk.length) return;
    this.slotObject = new Int32Array(slots);
    this.slotRelation = new Int32Array(slots);
    this.slotWalk = new Int32Array(slots);
  }
}
const SCAN_VISITS = 32;
/** Slots of a walk's table kept for the next walk at most (768 KB): a first listing walk's. */
const MAX_KEPT_SLOTS = 1 << 16;

function grown(old: Int32Array<ArrayBuffer>, length: number): Int32Array<ArrayBuffer> {
  const into = new Int32Array(length);
  into.set(old);
  return into;
}

function append<V>(map: Map<number, Map<number, V[]>>, ns: number, relation: number, value: V): void {
  let byRelation = map.get(ns);
  if (!byRelation) map.set(ns, (byRelation = new Map<number, V[]>()));
  const list = byRelation.get(relation);
  if (list) list.push(value);
  else byRelation.set(relation, [value]);
}

/** A subject and its groups as an index numbers them (GrantIndex.holderNodes). */
export interface HolderNodes {
  nodes: number[];
  /** The nodes as a set, when the subject has more than FEW_GROUPS groups. */
  set: ReadonlySet<number> | null;
  refs: Map<number, Ref>;
}

/** Where a check's walk starts (GrantIndex.targetOf). */
interface WalkTarget {
  start: number | undefined;
  relation: number | undefined;
}

/** The key of the walk a target needs (null: nothing to walk). */
const walkKey = ({ start, relation }: WalkTarget): string | null => (start === undefined || relation === undefined ? null : `${start} ${relation}`);

/** A walk of `check` kept for other subjects: its pairs, its levels (Walk's), and whether it ended (else the budget stopped it). */
interface RememberedWalk {
  objects: number[];
  relations: number[];
  levelEnds: number[];
  levelCosts: number[];
  finished: boolean;
}

/** A level's cost not known: the budget stopped the walk while counting it. */
const UNKNOWN_COST = -1;
/** The walk's last level, at MAX_ARROW_DEPTH: it ends there, with no cost counted. */
const LAST_LEVEL = -2;

/**
 * The walks of one bulk kept for the checks after them, by object node and relation number. Only a
 * walk that a later check of the bulk needs is kept, and no more pairs in all than a few checks'
 * budgets: a bulk of a thousand checks on different objects keeps nothing.
 */
class RememberedWalks {
  private readonly walks = new Map<string, RememberedWalk>();
  /** How many checks from the current one on need each walk. */
  private readonly wanted = new Map<string, number>();
  private position = -1;
  private pairs = 0;

  constructor(
    private readonly keys: readonly (string | null)[],
    private readonly budget: number,
  ) {
    for (const key of keys) if (key !== null) this.wanted.set(key, (this.wanted.get(key) ?? 0) + 1);
  }

  /** The key of the current check's walk (null: it has nothing to walk). */
  current(): string | null {
    return this.keys[this.position] ?? null;
  }

  /** The bulk moves on to its next check. */
  next(): void {
    const key = this.keys[++this.position];
    if (key !== null && key !== undefined) this.wanted.set(key, this.wanted.get(key)! - 1);
  }

  get(key: string): RememberedWalk | undefined {
    return this.walks.get(key);
  }

  /** Keeps the first `length` pairs of the walk (whole levels) if a later check needs it and there is room. */
  remember(key: string, walk: Walk, length: number, finished: boolean): void {
    if ((this.wanted.get(key) ?? 0) === 0 || this.pairs + length > REMEMBERED_BUDGETS * this.budget) return;
    this.pairs += length;
    const levels = walk.levelEnds.filter((end) => end <= length).length;
    this.walks.set(key, {
      objects: walk.objects.slice(0, length),
      relations: walk.relations.slice(0, length),
      levelEnds: walk.levelEnds.slice(0, levels),
      levelCosts: walk.levelCosts.slice(0, levels),
      finished,
    });
  }

  /** The grants changed: what was walked before no longer holds. */
  forget(): void {
    this.walks.clear();
    this.pairs = 0;
  }
}

/** The pairs one bulk keeps at most, in check budgets. */
const REMEMBERED_BUDGETS = 4;
/** Groups a check matches pair by pair; past this many it matches through a set, reading the smaller side. */
const FEW_GROUPS = 8;

/** No arrows out of a pair, for the check walk to read without making an empty list each time. */
const NO_ARROWS: readonly { via: number }[] = [];
/** A node no grant names: the subject of a walk that has none to stop at. */
const NO_NODE = -1;
/**
 * A grant kept aside with its window costs about this many grants' memory, against 48 bytes a grant at L: its slot, table cell
 * and heap entries (WindowedGrants) weigh 77 bytes more than a plain grant while in force, about 110 more out of force
 * (linked into explain's lists, and no edge in the lists then); measured with 200,000 grants.
 */
const WINDOW_WEIGHT = 3;
/** A name interned costs about this many grants' memory (its map entries and its namespace's node map). */
const NAME_WEIGHT = 4;
/** Unused names tolerated before a sweep is considered: a few hundred KB, fewer than a sweep would cost to repeat. */
const MIN_NAMES_BEFORE_SWEEP = 1024;
