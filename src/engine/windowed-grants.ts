import { BoundaryHeap } from './boundary-heap.ts';
import { inForce, windowOf, type GrantWindow } from './grant-window.ts';
import { NO_SLOT, SlotTable } from './slot-table.ts';
import { resized } from './typed-arrays.ts';
import { NONE } from './none.ts';

/**
 * The grants of a GrantIndex that have a window (docs/model.md#time-bound-grants), found by
 * (subject, relation, object) in constant time, each with its windows and whether one is in force at
 * `at`, the instant the index's lists stand at. Every finite boundary of their windows is in one of
 * two heaps, those after `at` (soonest first) and those passed (latest first): moving the clock
 * either way pops only the boundaries it crosses, O(log k) each, and re-evaluates only their grants.
 * The grants out of force are also linked by (object, relation) and by subject, for explain.
 *
 * One slot a grant, its fields in typed arrays (no object a grant for the collector to trace, as in
 * EdgeLists). A slot's generation changes with its windows: a boundary in a heap with another
 * generation is a stale one, dropped when it comes up (or when stale ones outnumber live ones).
 */
export class WindowedGrants {
  /** Grants held. */
  size = 0;
  /** The instant the grants stand at: every boundary up to it passed, none after it (mid-advance: the last one crossed). */
  at = 0;
  private slotCount = 0;
  private readonly freeSlots: number[] = [];
  private subjects = new Int32Array(MIN_SLOTS);
  private relations = new Int32Array(MIN_SLOTS);
  private objects = new Int32Array(MIN_SLOTS);
  /** The slot's first window, an open side infinite (both open: the grant without a window, beside others). */
  private notBefore = new Float64Array(MIN_SLOTS);
  private expiresAt = new Float64Array(MIN_SLOTS);
  /** The slot's other windows, as (not before, expires at) pairs: only a catch-up's replay holds more than one for a moment. */
  private readonly moreWindows = new Map<number, number[]>();
  private generations = new Int32Array(MIN_SLOTS);
  /** 1 while one of the slot's windows is in force at `at`. */
  private inForceNow = new Uint8Array(MIN_SLOTS);
  /** The out-of-force grants' circular lists: by (object, relation), and by subject with its `member` grants first. */
  private onNext = new Int32Array(MIN_SLOTS);
  private onPrevious = new Int32Array(MIN_SLOTS);
  private byNext = new Int32Array(MIN_SLOTS);
  private byPrevious = new Int32Array(MIN_SLOTS);
  private readonly byGrant = new SlotTable(3);
  private readonly outOnHeads = new SlotTable(2);
  private readonly outByHeads = new SlotTable(1);
  private readonly ahead = new BoundaryHeap(1);
  private readonly passed = new BoundaryHeap(-1);
  /** Boundaries of the grants held (the heaps' other entries are stale). */
  private liveBoundaries = 0;
  /** Windows evaluated, by writes and advances. */
  private evaluated = 0;

  /**
   * @param member the number of the `member` relation, whose grants a subject's list puts first
   * @param hold called when an advance puts a grant in force (true) or takes it out (false)
   */
  constructor(
    private readonly member: number,
    private readonly hold: (subject: number, relation: number, object: number, inForce: boolean) => void,
  ) {
    this.tablesReadSlots();
  }

  /** Windows evaluated and heap levels moved since the start: what the windows have cost, in steps (tests bound it). */
  get work(): number {
    return this.evaluated + this.ahead.steps + this.passed.steps;
  }

  holds(subject: number, relation: number, object: number): boolean {
    return this.byGrant.find(subject, relation, object) !== NO_SLOT;
  }

  /** The grant's windows (null there: the grant without one), or undefined when it is not held. */
  windowsOf(subject: number, relation: number, object: number): (GrantWindow | null)[] | undefined {
    const slot = this.byGrant.find(subject, relation, object);
    if (slot === NO_SLOT) return undefined;
    const windows = [boundsWindow(this.notBefore[slot]!, this.expiresAt[slot]!)];
    const more = this.moreWindows.get(slot) ?? [];
    for (let i = 0; i < more.length; i += 2) windows.push(boundsWindow(more[i]!, more[i + 1]!));
    return windows;
  }

  /**
   * Holds the grant with these windows (at least one, not only null), replacing those it had;
   * whether it is in force at `at`, for the caller to hold its edge so.
   */
  set(subject: number, relation: number, object: number, windows: readonly (GrantWindow | null)[]): boolean {
    let slot = this.byGrant.find(subject, relation, object);
    if (slot === NO_SLOT) {
      slot = this.newSlot(subject, relation, object);
    } else {
      this.liveBoundaries -= this.boundaryCount(slot);
      this.moreWindows.delete(slot);
    }
    const generation = (this.generations[slot] = (this.generations[slot]! + 1) | 0);
    const bounds = windows.flatMap((window) => [window?.notBefore ?? -Infinity, window?.expiresAt ?? Infinity]);
    [this.notBefore[slot], this.expiresAt[slot]] = [bounds[0]!, bounds[1]!];
    if (bounds.length > 2) this.moreWindows.set(slot, bounds.slice(2));
    for (const bound of bounds) {
      if (!Number.isFinite(bound)) continue;
      (bound <= this.at ? this.passed : this.ahead).push(bound, slot, generation);
      this.liveBoundaries++;
    }
    this.evaluated += windows.length;
    const held = windows.some((window) => inForce(window, this.at));
    this.settle(slot, held);
    this.dropStaleBoundaries();
    return held;
  }

  /** Forgets the grant; false when it was not held. */
  delete(subject: number, relation: number, object: number): boolean {
    const slot = this.byGrant.find(subject, relation, object);
    if (slot === NO_SLOT) return false;
    this.settle(slot, true);
    this.byGrant.delete(slot);
    this.liveBoundaries -= this.boundaryCount(slot);
    this.moreWindows.delete(slot);
    // Its boundaries in the heaps become stale.
    this.generations[slot] = (this.generations[slot]! + 1) | 0;
    this.freeSlots.push(slot);
    this.size--;
    this.dropStaleBoundaries();
    return true;
  }

  /**
   * Crosses the boundaries between `at` and `now`, forwards or backwards (a clock stepped back costs
   * what going forwards over the same boundaries does), each grant crossed re-evaluated and `hold`
   * told of those that change. Stops after `maxEvents` boundaries (stale ones included): true when
   * the grants stand at `now`; false when more remain, and until then the lists are between two instants.
   */
  advance(now: number, maxEvents = Infinity): boolean {
    for (let events = 0; ; events++) {
      const forwards = this.ahead.top <= now;
      if (!forwards && this.passed.top <= now) {
        this.at = now;
        return true;
      }
      if (events >= maxEvents) return false;
      const [from, to] = forwards ? [this.ahead, this.passed] : [this.passed, this.ahead];
      const [instant, slot, generation] = [from.top, from.topSlot, from.topGeneration];
      from.pop();
      this.at = instant;
      if (generation !== this.generations[slot]) continue;
      to.push(instant, slot, generation);
      // Forwards, the grant as it is from the boundary on; backwards, as it was just before it.
      const held = forwards ? this.inForceAt(slot, instant) : this.inForceJustBefore(slot, instant);
      if (this.settle(slot, held)) this.hold(this.subjects[slot]!, this.relations[slot]!, this.objects[slot]!, held);
    }
  }

  /** The grants on (object, relation) out of force at `at`, each with its first window. */
  outOfForceOn(object: number, relation: number): readonly { subject: number; window: GrantWindow }[] {
    const head = this.outOnHeads.find(object, relation);
    // Explain asks of every pair it walks, most of which have none.
    if (head === NO_SLOT) return NONE;
    const found: { subject: number; window: GrantWindow }[] = [];
    let slot = head;
    do {
      found.push({ subject: this.subjects[slot]!, window: this.firstWindow(slot) });
      slot = this.onNext[slot]!;
    } while (slot !== head);
    return found;
  }

  /** The subject's `member` grants out of force at `at`, each with its first window. */
  outOfForceMemberships(subject: number): { object: number; window: GrantWindow }[] {
    const found: { object: number; window: GrantWindow }[] = [];
    const head = this.outByHeads.find(subject);
    if (head === NO_SLOT) return found;
    let slot = head;
    // Memberships come first in a subject's list: the walk stops at its first other grant.
    while (this.relations[slot] === this.member) {
      found.push({ object: this.objects[slot]!, window: this.firstWindow(slot) });
      slot = this.byNext[slot]!;
      if (slot === head) break;
    }
    return found;
  }

  /** Whether the subject is the subject of a grant out of force at `at`. */
  holdsOutOfForce(subject: number): boolean {
    return this.outByHeads.find(subject) !== NO_SLOT;
  }

  /** Packs the slots, tables and heaps to what they hold (after a load). */
  compact(): void {
    const length = Math.max(this.slotCount, MIN_SLOTS);
    for (const column of SLOT_COLUMNS) this[column] = resized(this[column], length, this.slotCount) as never;
    this.tablesReadSlots();
    this.byGrant.fit();
    this.outOnHeads.fit();
    this.outByHeads.fit();
    this.ahead.keep(this.live);
    this.passed.keep(this.live);
  }

  /**
   * Records whether the grant is in force at `at`, linking it into the out-of-force lists or out of
   * them; whether that changed.
   */
  private settle(slot: number, held: boolean): boolean {
    if (held === (this.inForceNow[slot] === 1)) return false;
    this.inForceNow[slot] = held ? 1 : 0;
    const [subject, relation, object] = [this.subjects[slot]!, this.relations[slot]!, this.objects[slot]!];
    if (held) {
      unlink(this.outOnHeads, this.onNext, this.onPrevious, slot, this.outOnHeads.find(object, relation));
      unlink(this.outByHeads, this.byNext, this.byPrevious, slot, this.outByHeads.find(subject));
    } else {
      link(this.outOnHeads, this.onNext, this.onPrevious, slot, this.outOnHeads.find(object, relation), false);
      link(this.outByHeads, this.byNext, this.byPrevious, slot, this.outByHeads.find(subject), relation === this.member);
    }
    return true;
  }

  private inForceAt(slot: number, instant: number): boolean {
    return this.someWindow(slot, (notBefore, expiresAt) => notBefore <= instant && instant < expiresAt);
  }

  private inForceJustBefore(slot: number, instant: number): boolean {
    return this.someWindow(slot, (notBefore, expiresAt) => notBefore < instant && instant <= expiresAt);
  }

  private someWindow(slot: number, test: (notBefore: number, expiresAt: number) => boolean): boolean {
    this.evaluated++;
    if (test(this.notBefore[slot]!, this.expiresAt[slot]!)) return true;
    const more = this.moreWindows.get(slot) ?? [];
    for (let i = 0; i < more.length; i += 2) {
      this.evaluated++;
      if (test(more[i]!, more[i + 1]!)) return true;
    }
    return false;
  }

  /** The slot's first window, when it is out of force (so bounded). */
  private firstWindow(slot: number): GrantWindow {
    return boundsWindow(this.notBefore[slot]!, this.expiresAt[slot]!)!;
  }

  private boundaryCount(slot: number): number {
    const bounds = [this.notBefore[slot]!, this.expiresAt[slot]!, ...(this.moreWindows.get(slot) ?? [])];
    return bounds.filter((bound) => Number.isFinite(bound)).length;
  }

  /** Whether a heap entry is a boundary of the slot's windows now. */
  private readonly live = (slot: number, generation: number): boolean => this.generations[slot] === generation;

  /** Once stale boundaries outnumber the live ones, the heaps drop them: a cost spread over the writes that made them. */
  private dropStaleBoundaries(): void {
    if (this.ahead.length + this.passed.length <= 2 * this.liveBoundaries + MIN_STALE) return;
    this.ahead.keep(this.live);
    this.passed.keep(this.live);
  }

  private newSlot(subject: number, relation: number, object: number): number {
    let slot = this.freeSlots.pop();
    if (slot === undefined) {
      if (this.slotCount === this.subjects.length) {
        // By half: after a compaction the arrays are exactly full.
        const length = this.slotCount + (this.slotCount >> 1) + MIN_SLOTS;
        for (const column of SLOT_COLUMNS) this[column] = resized(this[column], length, this.slotCount) as never;
        this.tablesReadSlots();
      }
      slot = this.slotCount++;
    }
    [this.subjects[slot], this.relations[slot], this.objects[slot]] = [subject, relation, object];
    // In force until settled otherwise: in no out-of-force list.
    this.inForceNow[slot] = 1;
    this.byGrant.put(slot);
    this.size++;
    return slot;
  }

  /** The tables read their keys from the slots' columns, which growing replaces. */
  private tablesReadSlots(): void {
    this.byGrant.keysIn([this.subjects, this.relations, this.objects]);
    this.outOnHeads.keysIn([this.objects, this.relations]);
    this.outByHeads.keysIn([this.subjects]);
  }
}

const SLOT_COLUMNS = [
  'subjects',
  'relations',
  'objects',
  'notBefore',
  'expiresAt',
  'generations',
  'inForceNow',
  'onNext',
  'onPrevious',
  'byNext',
  'byPrevious',
] as const;
const MIN_SLOTS = 16;
/** Stale boundaries tolerated in the heaps beyond the live ones before they are dropped. */
const MIN_STALE = 64;

/** A window from its bounds, an open side infinite; open on both sides, the grant without one (null). */
const boundsWindow = (notBefore: number, expiresAt: number): GrantWindow | null =>
  windowOf(notBefore === -Infinity ? null : notBefore, expiresAt === Infinity ? null : expiresAt);

/** Links the slot into the circular list whose head is `head` (NO_SLOT: a new list), at its front or its end. */
function link(heads: SlotTable, next: Int32Array, previous: Int32Array, slot: number, head: number, first: boolean): void {
  if (head === NO_SLOT) {
    next[slot] = previous[slot] = slot;
    heads.put(slot);
    return;
  }
  const last = previous[head]!;
  [next[slot], previous[slot], next[last], previous[head]] = [head, last, slot, slot];
  // The same key as the head's: it takes the head's place in the table.
  if (first) heads.put(slot);
}

/** Unlinks the slot from the circular list whose head is `head`. */
function unlink(heads: SlotTable, next: Int32Array, previous: Int32Array, slot: number, head: number): void {
  if (next[slot] === slot) {
    heads.delete(slot);
    return;
  }
  next[previous[slot]!] = next[slot]!;
  previous[next[slot]!] = previous[slot]!;
  if (head === slot) heads.put(next[slot]!);
}
