import { drain, type UnitsOfWork } from './work-meter.ts';

/** A namespace's nodes as a ranking reads them (NodeNames's IdTable). */
export interface NamespaceNodes {
  readonly size: number;
  values(): Iterable<number>;
}

/**
 * The byte order of a GrantIndex's ids, as integers (docs/decisions.md, "Listings pick a page by rank").
 * Per namespace, `order` holds its nodes ascending by id as of its last ranking, and `rank` each
 * node's place in it, so that a listing filters and picks its page by comparing integers rather
 * than strings. Nodes named since (rank -1) compare by their ids; a node forgotten leaves a stale
 * entry behind (its rank no longer points back at it). Both are few: past RERANK_SLACK of them, or an
 * eighth of the namespace, the next listing in it merges them in, one pass over the order.
 *
 * Ids compare with `<` on strings: they are ASCII (docs/api.md), so string order is byte order.
 */
export class IdRanks {
  /** Per node: its index in its namespace's `order`, -1 when it is not ranked. */
  private rank: Int32Array;
  /** Per namespace number: its nodes ascending by id at its last ranking (stale entries included). */
  private readonly order: Int32Array[] = [];
  /** Per namespace number: nodes named or forgotten since its last ranking. */
  private readonly changes: number[] = [];

  constructor(length: number) {
    this.rank = new Int32Array(length).fill(-1);
  }

  /** The node arrays were resized to `length` (grown, or trimmed to the nodes in use by a compaction). */
  resize(length: number): void {
    const rank = new Int32Array(length).fill(-1);
    rank.set(this.rank.subarray(0, Math.min(length, this.rank.length)));
    this.rank = rank;
  }

  /** A namespace number was given to a new name: nothing of it is ranked. */
  renumbered(ns: number): void {
    this.order[ns] = new Int32Array(0);
    this.changes[ns] = 0;
  }

  /** `node` was given to an id of namespace `ns`, or taken back from one: its rank, if any, is stale. */
  changed(node: number, ns: number): void {
    this.rank[node] = -1;
    this.changes[ns]!++;
  }

  /** Whether the namespace has changed enough since its last ranking to be ranked again (`ranking`). */
  due(ns: number, nodes: NamespaceNodes): boolean {
    return this.changes[ns]! > Math.max(RERANK_SLACK, nodes.size >> 3);
  }

  /** Ranks the namespace again at once if it is due: `ranking`'s work in one go. */
  refresh(ns: number, nodes: NamespaceNodes, ids: readonly (string | undefined)[], namespaces: Int32Array): void {
    if (this.due(ns, nodes)) drain(this.ranking(ns, nodes, ids, namespaces));
  }

  /**
   * Ranks the namespace again: the ranked nodes still there, in their order, merged with the
   * unranked ones sorted. `nodes`: the namespace's nodes by id; `ids` and `namespaces`: every node's
   * id and namespace. Yields every RANK_UNIT nodes sorted or merged (UnitsOfWork), so that a million
   * ids (half a second of sorting) are ranked in slices; the ranks change only at its end, so a
   * ranking stopped on the way leaves them as they were. Nothing may rename the nodes meanwhile.
   */
  *ranking(ns: number, nodes: NamespaceNodes, ids: readonly (string | undefined)[], namespaces: Int32Array): UnitsOfWork {
    const old = this.order[ns]!;
    const unranked: number[] = [];
    let read = 0;
    for (const node of nodes.values()) {
      if (this.rank[node] === -1) unranked.push(node);
      if (++read % RANK_UNIT === 0) yield;
    }
    const fresh = yield* sortedById(unranked, ids);
    const order = new Int32Array(nodes.size);
    let [i, j, k] = [0, 0, 0];
    for (;;) {
      while (i < old.length && !this.live(old, i, ns, namespaces)) i++;
      if (i === old.length && j === fresh.length) break;
      const take = j === fresh.length || (i < old.length && ids[old[i]!]! < ids[fresh[j]!]!) ? old[i++]! : fresh[j++]!;
      order[k++] = take;
      if (k % RANK_UNIT === 0) yield;
    }
    const rank = this.rank;
    for (let r = 0; r < order.length; r++) rank[order[r]!] = r;
    this.order[ns] = order;
    this.changes[ns] = 0;
  }

  /** The first rank of `ns` whose ids are all above `after` (a ranked node is after it if its rank is at least this). */
  firstAbove(ns: number, after: string, ids: readonly (string | undefined)[], namespaces: Int32Array): number {
    const order = this.order[ns]!;
    let [low, high] = [0, order.length];
    while (low < high) {
      const middle = (low + high) >> 1;
      // Stale entries have no id to compare: the next live one stands for them.
      let live = middle;
      while (live < high && !this.live(order, live, ns, namespaces)) live++;
      if (live === high) high = middle;
      else if (ids[order[live]!]! > after) high = middle;
      else low = live + 1;
    }
    return low;
  }

  /** Whether entry `i` of the order of `ns` is still the node ranked there (not forgotten, nor given to another id since). */
  private live(order: Int32Array, i: number, ns: number, namespaces: Int32Array): boolean {
    return this.rank[order[i]!] === i && namespaces[order[i]!] === ns;
  }

  /** Whether the node's id is above `after`, given `firstAbove`'s answer for it. */
  isAbove(node: number, after: string, firstAbove: number, ids: readonly (string | undefined)[]): boolean {
    const rank = this.rank[node]!;
    return rank >= 0 ? rank >= firstAbove : ids[node]! > after;
  }

  /**
   * The ids of the `limit` nodes of smallest id among `nodes` (all of namespace `ns`), ascending. A
   * listing page takes 100 of maybe a million: the ranked nodes go by their ranks alone (a bounded
   * max-heap of them keeps the page so far, and most are turned away by one comparison with its
   * top), and the few unranked ones are merged in by id.
   */
  smallest(ns: number, nodes: readonly number[], limit: number, ids: readonly (string | undefined)[]): string[] {
    const rank = this.rank;
    const heap = new Int32Array(limit);
    let size = 0;
    const unranked: number[] = [];
    for (const node of nodes) {
      const r = rank[node]!;
      if (r < 0) unranked.push(node);
      else if (size < limit) {
        let i = size++;
        for (let parent = (i - 1) >> 1; i > 0 && heap[parent]! < r; i = parent, parent = (i - 1) >> 1) heap[i] = heap[parent]!;
        heap[i] = r;
      } else if (r < heap[0]!) {
        let i = 0;
        for (;;) {
          const left = 2 * i + 1;
          if (left >= limit) break;
          const larger = left + 1 < limit && heap[left + 1]! > heap[left]! ? left + 1 : left;
          if (heap[larger]! <= r) break;
          heap[i] = heap[larger]!;
          i = larger;
        }
        heap[i] = r;
      }
    }
    const order = this.order[ns]!;
    const page = heap
      .subarray(0, size)
      .sort()
      .reduce<string[]>((out, r) => (out.push(ids[order[r]!]!), out), []);
    if (unranked.length === 0) return page;
    const others = unranked.map((node) => ids[node]!).sort((a, b) => (a < b ? -1 : 1));
    const merged: string[] = [];
    for (let [i, j] = [0, 0]; merged.length < limit && (i < page.length || j < others.length);) {
      merged.push(j === others.length || (i < page.length && page[i]! < others[j]!) ? page[i++]! : others[j++]!);
    }
    return merged;
  }
}

/** Nodes named or forgotten in a namespace that listings compare by id before it is ranked again. */
const RERANK_SLACK = 1024;

/** Nodes sorted or merged between two yields of a ranking (a power of two: about a millisecond of comparing ids). */
const RANK_UNIT = 4_096;

/**
 * The nodes ascending by id: runs of RANK_UNIT sorted by the engine's sort, then merged pairwise,
 * yielding after each run and every RANK_UNIT nodes merged (a bottom-up merge sort, written here
 * because Array.prototype.sort cannot give way halfway through a million ids).
 */
function* sortedById(nodes: readonly number[], ids: readonly (string | undefined)[]): Generator<void, Int32Array> {
  const byId = (a: number, b: number) => (ids[a]! < ids[b]! ? -1 : 1);
  let from = Int32Array.from(nodes);
  let into = new Int32Array(from.length);
  for (let start = 0; start < from.length; start += RANK_UNIT) {
    from.subarray(start, start + RANK_UNIT).sort(byId);
    yield;
  }
  for (let width = RANK_UNIT; width < from.length; width *= 2) {
    for (let left = 0; left < from.length; left += 2 * width) {
      const [middle, right] = [Math.min(left + width, from.length), Math.min(left + 2 * width, from.length)];
      let [i, j] = [left, middle];
      for (let k = left; k < right; k++) {
        into[k] = j === right || (i < middle && ids[from[i]!]! < ids[from[j]!]!) ? from[i++]! : from[j++]!;
        if (k % RANK_UNIT === RANK_UNIT - 1) yield;
      }
    }
    [from, into] = [into, from];
  }
  return from;
}
