import { inForce, windowOf, type GrantWindow } from './grant-window.ts';

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
  outOfForceOn(object: number, relation: number): { subject: number; window: GrantWindow }[] {
    const found: { subject: number; window: GrantWindow }[] = [];
    const head = this.outOnHeads.find(object, relation);
    if (head === NO_SLOT) return found;
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
const NO_SLOT = -1;

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

/**
 * A hash table of slots by a key of one to three integers read off each slot's columns, by open
 * addressing with linear probing (a removal shifts back the slots after it, so no tombstones).
 * Half full at most, and a quarter at least once it has grown, so that probes stay short and an
 * emptied table does not stay large.
 */
class SlotTable {
  private cells = new Int32Array(MIN_CELLS).fill(NO_SLOT);
  private count = 0;
  private columns: readonly Int32Array[] = [];

  constructor(private readonly width: 1 | 2 | 3) {}

  keysIn(columns: readonly Int32Array[]): void {
    this.columns = columns;
  }

  /** The slot with this key, or NO_SLOT. */
  find(a: number, b = 0, c = 0): number {
    const mask = this.cells.length - 1;
    for (let cell = mix(a, b, c) & mask; ; cell = (cell + 1) & mask) {
      const slot = this.cells[cell]!;
      if (slot === NO_SLOT || this.keyIs(slot, a, b, c)) return slot;
    }
  }

  /** Puts the slot in under its key, in place of the slot with the same key if there is one. */
  put(slot: number): void {
    if (2 * (this.count + 1) > this.cells.length) this.resize(2 * this.cells.length);
    const mask = this.cells.length - 1;
    const [a, b, c] = this.keyOf(slot);
    let cell = mix(a, b, c) & mask;
    while (this.cells[cell] !== NO_SLOT && !this.keyIs(this.cells[cell]!, a, b, c)) cell = (cell + 1) & mask;
    if (this.cells[cell] === NO_SLOT) this.count++;
    this.cells[cell] = slot;
  }

  /** Takes the slot out (it is in). */
  delete(slot: number): void {
    const cells = this.cells;
    const mask = cells.length - 1;
    let hole = this.home(slot);
    while (cells[hole] !== slot) hole = (hole + 1) & mask;
    for (let cell = (hole + 1) & mask; cells[cell] !== NO_SLOT; cell = (cell + 1) & mask) {
      // A slot moves back into the hole unless its home lies after the hole, up to where it is.
      if (((cell - this.home(cells[cell]!)) & mask) >= ((cell - hole) & mask)) {
        cells[hole] = cells[cell]!;
        hole = cell;
      }
    }
    cells[hole] = NO_SLOT;
    this.count--;
    if (8 * this.count < cells.length && cells.length > MIN_CELLS) this.resize(cells.length / 2);
  }

  /** Shrinks to the smallest size that keeps it at most half full. */
  fit(): void {
    let cells = MIN_CELLS;
    while (cells < 2 * this.count) cells *= 2;
    this.resize(cells);
  }

  private home(slot: number): number {
    const [a, b, c] = this.keyOf(slot);
    return mix(a, b, c) & (this.cells.length - 1);
  }

  private keyOf(slot: number): [number, number, number] {
    const columns = this.columns;
    return [columns[0]![slot]!, this.width > 1 ? columns[1]![slot]! : 0, this.width > 2 ? columns[2]![slot]! : 0];
  }

  private keyIs(slot: number, a: number, b: number, c: number): boolean {
    const columns = this.columns;
    return columns[0]![slot] === a && (this.width < 2 || columns[1]![slot] === b) && (this.width < 3 || columns[2]![slot] === c);
  }

  private resize(length: number): void {
    if (length === this.cells.length) return;
    const old = this.cells;
    this.cells = new Int32Array(length).fill(NO_SLOT);
    this.count = 0;
    for (const slot of old) if (slot !== NO_SLOT) this.put(slot);
  }
}
const MIN_CELLS = 16;

/** Mixes up to three integers into a hash whose low bits all depend on every bit of each. */
function mix(a: number, b: number, c: number): number {
  let hash = Math.imul(a ^ 0x3c6ef372, 0x9e3779b1);
  hash = Math.imul(hash ^ b ^ (hash >>> 15), 0x85ebca6b);
  hash = Math.imul(hash ^ c ^ (hash >>> 13), 0xc2b2ae35);
  return hash ^ (hash >>> 16);
}

/**
 * A binary heap of boundaries (instant, slot, the slot's generation when pushed), in typed arrays:
 * soonest first (order 1) or latest first (order -1).
 */
class BoundaryHeap {
  length = 0;
  /** Levels moved by pushes and pops. */
  steps = 0;
  private instants = new Float64Array(MIN_SLOTS);
  private slots = new Int32Array(MIN_SLOTS);
  private generations = new Int32Array(MIN_SLOTS);

  constructor(private readonly order: 1 | -1) {}

  /** The first instant; past every instant when empty. */
  get top(): number {
    return this.length > 0 ? this.instants[0]! : this.order * Infinity;
  }

  get topSlot(): number {
    return this.slots[0]!;
  }

  get topGeneration(): number {
    return this.generations[0]!;
  }

  push(instant: number, slot: number, generation: number): void {
    if (this.length === this.instants.length) this.resize(2 * this.length);
    this.place(this.length++, instant, slot, generation);
    this.up(this.length - 1);
  }

  pop(): void {
    const last = --this.length;
    if (last === 0) return;
    this.place(0, this.instants[last]!, this.slots[last]!, this.generations[last]!);
    this.down(0);
  }

  /** Keeps the entries `live` accepts, in order again, and lets the room they leave go. */
  keep(live: (slot: number, generation: number) => boolean): void {
    let kept = 0;
    for (let i = 0; i < this.length; i++) {
      if (live(this.slots[i]!, this.generations[i]!)) this.place(kept++, this.instants[i]!, this.slots[i]!, this.generations[i]!);
    }
    this.length = kept;
    for (let i = (kept >> 1) - 1; i >= 0; i--) this.down(i);
    this.resize(Math.max(kept, MIN_SLOTS));
  }

  private before(i: number, j: number): boolean {
    return this.order * (this.instants[i]! - this.instants[j]!) < 0;
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) return;
      this.swap(i, parent);
      i = parent;
      this.steps++;
    }
  }

  private down(i: number): void {
    for (;;) {
      const [left, right] = [2 * i + 1, 2 * i + 2];
      let first = i;
      if (left < this.length && this.before(left, first)) first = left;
      if (right < this.length && this.before(right, first)) first = right;
      if (first === i) return;
      this.swap(i, first);
      i = first;
      this.steps++;
    }
  }

  private place(i: number, instant: number, slot: number, generation: number): void {
    this.instants[i] = instant;
    this.slots[i] = slot;
    this.generations[i] = generation;
  }

  private swap(i: number, j: number): void {
    const [instant, slot, generation] = [this.instants[i]!, this.slots[i]!, this.generations[i]!];
    this.place(i, this.instants[j]!, this.slots[j]!, this.generations[j]!);
    this.place(j, instant, slot, generation);
  }

  private resize(length: number): void {
    if (length === this.instants.length) return;
    this.instants = resized(this.instants, length, this.length);
    this.slots = resized(this.slots, length, this.length);
    this.generations = resized(this.generations, length, this.length);
  }
}

/** A typed array of `length` with the first `used` entries of `old`. */
function resized<T extends Int32Array<ArrayBuffer> | Float64Array<ArrayBuffer> | Uint8Array<ArrayBuffer>>(old: T, length: number, used: number): T {
  const into = new (old.constructor as new (length: number) => T)(length);
  into.set(old.subarray(0, used));
  return into;
}
