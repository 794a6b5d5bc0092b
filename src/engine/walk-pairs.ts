/**
 * The (object, relation) pairs of a walk, in the order visited, each once. Most checks visit a
 * handful, found faster by scanning than by hashing; a long walk (a listing's: tens of thousands)
 * switches to an open-addressing table of typed arrays, kept from walk to walk and stamped with
 * the walk's number, so that it is neither cleared nor allocated again, and holds no object.
 * The arrays too are kept from walk to walk, counted rather than cut: setting an array's length to
 * 0 lets V8 drop its storage, which every walk then allocated again (docs/measurements.md, session 26).
 * The process has one (THE_WALK), which every tenant's walks use in turn: each runs start to end
 * within one synchronous call, so no two use it at once, and a large walk's storage is kept for
 * the next rather than grown again by every walk of a tenant whose own was cut (docs/measurements.md,
 * session 32: 1.6 MB of garbage a check on a fan-out graph, 164 MB a bulk of 100).
 */
export class Walk {
  /** The pairs visited: the first `size` of each. */
  readonly objects: number[] = [];
  readonly relations: number[] = [];
  size = 0;
  /** Per level of a check's walk, the first `levels` of each: the end of its pairs, and the steps reading it took (CheckWalk's UNKNOWN_COST, LAST_LEVEL). */
  readonly levelEnds: number[] = [];
  readonly levelCosts: number[] = [];
  levels = 0;
  /**
   * A check's level's related objects, each with the targets of the arrow that reached it: read and
   * counted before any is visited (CheckWalk.walkBackwards), as many as the level's reads found.
   */
  readonly reached: number[] = [];
  readonly reachedTargets: (readonly number[])[] = [];
  private hashed = false;
  /** Per slot: the pair's object and relation, and the number of the walk that put it there. */
  private slotObject = new Int32Array(0);
  private slotRelation = new Int32Array(0);
  private slotWalk = new Int32Array(0);
  private walkNumber = 0;

  clear(): void {
    this.size = 0;
    this.levels = 0;
    this.hashed = false;
    // A very long walk's table and pairs are let go rather than kept for all walks after it.
    if (this.slotWalk.length > MAX_KEPT_SLOTS) this.resize(0);
    if (this.objects.length > MAX_KEPT_PAIRS) this.objects.length = this.relations.length = 0;
    if (this.reached.length > MAX_KEPT_PAIRS) this.reached.length = this.reachedTargets.length = 0;
    if (++this.walkNumber === 0x7fffffff) {
      this.walkNumber = 1;
      this.slotWalk.fill(0);
    }
  }

  visit(object: number, relation: number): void {
    const size = this.size;
    if (!this.hashed) {
      for (let i = 0; i < size; i++) if (this.objects[i] === object && this.relations[i] === relation) return;
      if (size === SCAN_VISITS) {
        this.hashed = true;
        this.resize(Math.max(this.slotWalk.length, 4 * SCAN_VISITS));
        for (let i = 0; i < size; i++) this.put(this.objects[i]!, this.relations[i]!);
      }
    }
    if (this.hashed) {
      // Kept under half full, so that probes stay short.
      if (2 * (size + 1) > this.slotWalk.length) this.rehash(2 * this.slotWalk.length);
      if (!this.put(object, relation)) return;
    }
    this.objects[size] = object;
    this.relations[size] = relation;
    this.size = size + 1;
  }

  /** Ends a check's level with the pairs before `end`, at `cost` (CheckWalk's UNKNOWN_COST until its reads are counted). */
  endLevel(end: number, cost: number): void {
    this.levelEnds[this.levels] = end;
    this.levelCosts[this.levels] = cost;
    this.levels++;
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
    for (let i = 0; i < this.size; i++) this.put(this.objects[i]!, this.relations[i]!);
  }

  private resize(slots: number): void {
    if (slots === this.slotWalk.length) return;
    this.slotObject = new Int32Array(slots);
    this.slotRelation = new Int32Array(slots);
    this.slotWalk = new Int32Array(slots);
  }
}
/** Pairs a walk finds by scanning; past them, through its table. */
const SCAN_VISITS = 32;
/** Slots of the walk's table kept for the next walk at most (768 KB): a first listing walk's. */
const MAX_KEPT_SLOTS = 1 << 16;
/** Pairs (and reached objects) whose arrays are kept for the next walk at most (1 MB each): a check's at the default budget, not a long listing's. */
const MAX_KEPT_PAIRS = 1 << 16;

/** The process's one walk (Walk). */
export const THE_WALK = new Walk();
