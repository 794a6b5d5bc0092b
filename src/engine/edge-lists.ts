import type { NodeSet } from './marked-nodes.ts';
import { drain, type UnitsOfWork } from './work-meter.ts';

/**
 * Per node, a list of (relation, other node) pairs, all lists in one Int32Array. Millions of small
 * JS arrays would cost every garbage collection of the process, young ones included, time in
 * proportion to their number; typed arrays hold no pointers for the collector to trace
 * (docs/decisions.md#grants-held-in-memory).
 *
 * A list lives in a slab of the arena whose capacity is a power of two, moved to one twice as large
 * when full; freed slabs are reused by size. `compact` (after a load) packs every list into a slab
 * of exactly its length, which drops the slack of the doubling (a third of the arena, measured on
 * dataset L); such a list moves to a power-of-two slab on its next add and stays in those. The room
 * it leaves is not reused: at most the compacted arena, which is what the slack would have been.
 * Pairs are unordered: a short list is scanned, and a
 * list of `indexFrom` pairs or more also gets a map to each pair's place, so that finding a pair
 * stays constant-time on nodes of many grants.
 */
export class EdgeLists {
  /** Pairs, relation then other node, in every node's slab. Read it between `from` and `to`. */
  arena = new Int32Array(1024);
  /** Where the arena's unused tail begins. */
  private top = 0;
  private slabStart = new Int32Array(1024);
  private pairCount = new Int32Array(1024);
  /** log2 of the slab's capacity in pairs; NO_SLAB, or EXACT_SLAB (as long as its pairs, or longer after removals). */
  private slabSize = new Int8Array(1024).fill(NO_SLAB);
  /** Free slabs' starts, by log2 of their capacity. */
  private readonly freeSlabs: number[][] = [];
  /** For long lists: by node, relation and other node, the pair's number in the node's list. */
  private readonly places = new Map<number, Map<number, Map<number, number>>>();

  constructor(private readonly indexFrom: number) {}

  /** Where the node's pairs begin in `arena`. */
  from(node: number): number {
    return node < this.slabStart.length ? this.slabStart[node]! : 0;
  }

  /** Where the node's pairs end in `arena`. */
  to(node: number): number {
    return node < this.slabStart.length ? this.slabStart[node]! + 2 * this.pairCount[node]! : 0;
  }

  has(node: number, relation: number, other: number): boolean {
    return this.find(node, relation, other) >= 0;
  }

  /** Whether the node has (relation, n) for `other` or one of `others`. */
  hasAny(node: number, relation: number, other: number, others: readonly number[]): boolean {
    const indexed = this.places.get(node);
    if (indexed !== undefined) {
      const places = indexed.get(relation);
      if (places === undefined) return false;
      if (places.has(other)) return true;
      for (const candidate of others) if (places.has(candidate)) return true;
      return false;
    }
    const arena = this.arena;
    for (let i = this.from(node), end = this.to(node); i < end; i += 2) {
      if (arena[i] !== relation) continue;
      const held = arena[i + 1]!;
      if (held === other || (others.length > 0 && others.includes(held))) return true;
    }
    return false;
  }

  /** How many of the node's pairs have `relation`. */
  countWith(node: number, relation: number): number {
    const indexed = this.places.get(node);
    if (indexed !== undefined) return indexed.get(relation)?.size ?? 0;
    let count = 0;
    const arena = this.arena;
    for (let i = this.from(node), end = this.to(node); i < end; i += 2) if (arena[i] === relation) count++;
    return count;
  }

  /** Whether the node has (relation, n) for some n in `others`, reading whichever of the two is smaller. */
  hasAnyOf(node: number, relation: number, others: NodeSet): boolean {
    const indexed = this.places.get(node);
    if (indexed !== undefined) {
      const places = indexed.get(relation);
      if (places === undefined) return false;
      if (places.size <= others.size) {
        for (const other of places.keys()) if (others.has(other)) return true;
      } else {
        for (const other of others) if (places.has(other)) return true;
      }
      return false;
    }
    const arena = this.arena;
    for (let i = this.from(node), end = this.to(node); i < end; i += 2) {
      if (arena[i] === relation && others.has(arena[i + 1]!)) return true;
    }
    return false;
  }

  /** The other nodes of the node's pairs with `relation`, into `into`: a long list is not scanned for a few. */
  othersWith(node: number, relation: number, into: number[]): number[] {
    into.length = 0;
    const indexed = this.places.get(node);
    if (indexed !== undefined) {
      for (const other of indexed.get(relation)?.keys() ?? []) into.push(other);
      return into;
    }
    const arena = this.arena;
    for (let i = this.from(node), end = this.to(node); i < end; i += 2) if (arena[i] === relation) into.push(arena[i + 1]!);
    return into;
  }

  /**
   * How many pairs of the node have `relation`, their other nodes written into `into` from `at` on
   * (its length left as it is, which keeps its storage); a long list's are counted, not written,
   * when they are more than `most`.
   */
  othersAt(node: number, relation: number, into: number[], at: number, most: number): number {
    const indexed = this.places.get(node);
    if (indexed !== undefined) {
      const places = indexed.get(relation);
      if (places === undefined) return 0;
      if (places.size <= most) for (const other of places.keys()) into[at++] = other;
      return places.size;
    }
    const arena = this.arena;
    let count = 0;
    for (let i = this.from(node), end = this.to(node); i < end; i += 2) if (arena[i] === relation) into[at + count++] = arena[i + 1]!;
    return count;
  }

  /** Appends the pair, which the caller knows the node does not have. */
  add(node: number, relation: number, other: number): void {
    this.ensureNodes(node + 1);
    const count = this.pairCount[node]!;
    const size = this.slabSize[node]!;
    if (size === NO_SLAB) this.moveToSlab(node, MIN_SLAB_SIZE);
    // An exact slab is taken as full: the smallest power of two above its pairs.
    else if (size === EXACT_SLAB) this.moveToSlab(node, 32 - Math.clz32(count));
    else if (count === 1 << size) this.moveToSlab(node, size + 1);
    const at = this.slabStart[node]! + 2 * count;
    this.arena[at] = relation;
    this.arena[at + 1] = other;
    this.pairCount[node] = count + 1;
    const places = this.places.get(node);
    if (places !== undefined) placeIn(places, relation).set(other, count);
    else if (count + 1 >= this.indexFrom) this.indexPlaces(node);
  }

  /** Removes the pair; false when the node did not have it. */
  remove(node: number, relation: number, other: number): boolean {
    const place = this.find(node, relation, other);
    if (place < 0) return false;
    const start = this.slabStart[node]!;
    const last = this.pairCount[node]! - 1;
    const places = this.places.get(node);
    if (place !== last) {
      // The last pair takes the removed one's place.
      const [movedRelation, moved] = [this.arena[start + 2 * last]!, this.arena[start + 2 * last + 1]!];
      this.arena[start + 2 * place] = movedRelation;
      this.arena[start + 2 * place + 1] = moved;
      places?.get(movedRelation)!.set(moved, place);
    }
    this.pairCount[node] = last;
    if (places !== undefined) {
      const byOther = places.get(relation)!;
      byOther.delete(other);
      if (byOther.size === 0) places.delete(relation);
      if (last < this.indexFrom / 2) this.places.delete(node);
    }
    if (last === 0) this.freeSlab(node);
    return true;
  }

  /** The pair's number in the node's list, or -1. */
  private find(node: number, relation: number, other: number): number {
    const places = this.places.get(node);
    if (places !== undefined) return places.get(relation)?.get(other) ?? -1;
    const start = this.from(node);
    const arena = this.arena;
    for (let i = start, end = this.to(node); i < end; i += 2) {
      if (arena[i] === relation && arena[i + 1] === other) return (i - start) / 2;
    }
    return -1;
  }

  private indexPlaces(node: number): void {
    const places = new Map<number, Map<number, number>>();
    const start = this.slabStart[node]!;
    for (let pair = 0; pair < this.pairCount[node]!; pair++) {
      placeIn(places, this.arena[start + 2 * pair]!).set(this.arena[start + 2 * pair + 1]!, pair);
    }
    this.places.set(node, places);
  }

  /** Packs the lists at once (compacting). */
  compact(): void {
    drain(this.compacting());
  }

  /**
   * Packs every list into a slab of exactly its length, in a new arena of exactly their pairs, and
   * the per-node arrays to the last node with pairs: what a load leaves is the index's size, no more.
   * Yields every COMPACT_UNIT nodes (UnitsOfWork); nothing may change the lists until it ends.
   */
  *compacting(): UnitsOfWork {
    let nodes = 0;
    let pairs = 0;
    for (let node = 0; node < this.pairCount.length; node++) {
      if (this.pairCount[node]! > 0) {
        nodes = node + 1;
        pairs += this.pairCount[node]!;
      }
    }
    const arena = new Int32Array(2 * pairs);
    const slabStart = new Int32Array(nodes);
    const slabSize = new Int8Array(nodes).fill(NO_SLAB);
    let top = 0;
    for (let node = 0; node < nodes; node++) {
      if (node % COMPACT_UNIT === COMPACT_UNIT - 1) yield;
      const length = 2 * this.pairCount[node]!;
      if (length === 0) continue;
      arena.set(this.arena.subarray(this.slabStart[node], this.slabStart[node]! + length), top);
      slabStart[node] = top;
      slabSize[node] = EXACT_SLAB;
      top += length;
    }
    this.arena = arena;
    this.top = top;
    this.slabStart = slabStart;
    this.slabSize = slabSize;
    this.pairCount = this.pairCount.slice(0, nodes);
    this.freeSlabs.length = 0;
  }

  private moveToSlab(node: number, size: number): void {
    const start = this.freeSlabs[size]?.pop() ?? this.claim(2 << size);
    const count = this.pairCount[node]!;
    if (count > 0) this.arena.copyWithin(start, this.slabStart[node]!, this.slabStart[node]! + 2 * count);
    if (this.slabSize[node] !== NO_SLAB) this.freeSlab(node);
    this.slabStart[node] = start;
    this.slabSize[node] = size;
  }

  /** Frees the node's slab for reuse by size (an exact slab is left as it is). */
  private freeSlab(node: number): void {
    const size = this.slabSize[node]!;
    if (size !== EXACT_SLAB) (this.freeSlabs[size] ??= []).push(this.slabStart[node]!);
    this.slabSize[node] = NO_SLAB;
    this.slabStart[node] = 0;
  }

  /** `length` unused int32s at the arena's tail, the arena grown as needed. */
  private claim(length: number): number {
    if (this.top + length > this.arena.length) {
      const arena = new Int32Array(Math.max(2 * this.arena.length, this.top + length));
      arena.set(this.arena.subarray(0, this.top));
      this.arena = arena;
    }
    this.top += length;
    return this.top - length;
  }

  private ensureNodes(nodes: number): void {
    if (nodes <= this.slabStart.length) return;
    // By half: after a compaction the arrays are exactly full, and a new node should not double them.
    const length = Math.max(this.slabStart.length + (this.slabStart.length >> 1), nodes, 1024);
    this.slabStart = grown(this.slabStart, new Int32Array(length));
    this.pairCount = grown(this.pairCount, new Int32Array(length));
    this.slabSize = grown(this.slabSize, new Int8Array(length).fill(NO_SLAB));
  }
}

/** Smallest slab: 2 pairs. */
const MIN_SLAB_SIZE = 1;
/** Nodes compacting copies between two yields (a few hundred microseconds). */
const COMPACT_UNIT = 16_384;
const NO_SLAB = -1;
const EXACT_SLAB = -2;

function grown<T extends Int32Array | Int8Array>(old: T, into: T): T {
  into.set(old);
  return into;
}

function placeIn(places: Map<number, Map<number, number>>, relation: number): Map<number, number> {
  let byOther = places.get(relation);
  if (byOther === undefined) places.set(relation, (byOther = new Map<number, number>()));
  return byOther;
}
