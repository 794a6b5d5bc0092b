/** No slot: a key not in the table, or an empty cell. */
export const NO_SLOT = -1;

/**
 * A hash table of slots by a key of one to three integers read off each slot's columns, by open
 * addressing with linear probing (a removal shifts back the slots after it, so no tombstones).
 * Half full at most, and a quarter at least once it has grown, so that probes stay short and an
 * emptied table does not stay large.
 */
export class SlotTable {
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
