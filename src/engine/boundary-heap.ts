import { resized } from './typed-arrays.ts';

/**
 * A binary heap of boundaries (instant, slot, the slot's generation when pushed), in typed arrays:
 * soonest first (order 1) or latest first (order -1).
 */
export class BoundaryHeap {
  length = 0;
  /** Levels moved by pushes and pops. */
  steps = 0;
  private instants = new Float64Array(MIN_ENTRIES);
  private slots = new Int32Array(MIN_ENTRIES);
  private generations = new Int32Array(MIN_ENTRIES);

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
    this.resize(Math.max(kept, MIN_ENTRIES));
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
/** Entries a heap has room for at least. */
const MIN_ENTRIES = 16;
