/**
 * A namespace's nodes by id (NodeNames), in one Int32Array of (hash, node) pairs, open addressing
 * with linear probing, kept at most half full. Every check looks two ids up here (its object among,
 * say, 100,000 documents, its subject among the users), and a look-up is mostly cache misses: a
 * Map's goes to its bucket, then down a chain of entries, reading each entry's key string on the
 * way; here a probe reads one slot, which holds the id's hash beside its node, and the id's string
 * only once the hash matches (docs/decisions.md#a-namespaces-ids-are-looked-up-in-a-table-of-their-own).
 * The ids themselves are the caller's (NodeNames.nodeId, by node): the table holds no pointer.
 */
export class IdTable {
  private slots = new Int32Array(2 * MIN_SLOTS).fill(EMPTY);
  private mask = MIN_SLOTS - 1;
  /** Nodes held. */
  size = 0;

  /** The node of `id`, if held; `ids`: every node's id. */
  get(id: string, ids: readonly (string | undefined)[]): number | undefined {
    const hash = hashOf(id);
    const slots = this.slots;
    for (let slot = hash & this.mask; ; slot = (slot + 1) & this.mask) {
      const node = slots[2 * slot + 1]!;
      if (node === EMPTY) return undefined;
      if (slots[2 * slot] === hash && ids[node] === id) return node;
    }
  }

  /** Holds `node` under `id`, which the table does not hold. */
  add(id: string, node: number): void {
    if (2 * (this.size + 1) > this.mask + 1) this.resize(2 * (this.mask + 1));
    this.put(hashOf(id), node);
    this.size++;
  }

  /** Lets go of `id` (`ids`: every node's id, `id`'s still among them); nothing when it is not held. */
  delete(id: string, ids: readonly (string | undefined)[]): void {
    const hash = hashOf(id);
    const slots = this.slots;
    const mask = this.mask;
    let slot = hash & mask;
    for (; ; slot = (slot + 1) & mask) {
      const node = slots[2 * slot + 1]!;
      if (node === EMPTY) return;
      if (slots[2 * slot] === hash && ids[node] === id) break;
    }
    // Backward shift: each pair after the hole that may sit in it moves back, so that no probe
    // stops at a hole before its pair (no tombstones to sweep).
    for (let next = (slot + 1) & mask; slots[2 * next + 1] !== EMPTY; next = (next + 1) & mask) {
      const home = slots[2 * next]! & mask;
      // The pair at `next` stays when its home lies cyclically in (slot, next].
      if (slot < next ? home > slot && home <= next : home > slot || home <= next) continue;
      slots[2 * slot] = slots[2 * next]!;
      slots[2 * slot + 1] = slots[2 * next + 1]!;
      slot = next;
    }
    slots[2 * slot + 1] = EMPTY;
    this.size--;
    if (8 * this.size < this.mask + 1 && this.mask + 1 > MIN_SLOTS) this.resize((this.mask + 1) >> 1);
  }

  /** The nodes held, in no order (a table resized meanwhile is read as it was). */
  *values(): IterableIterator<number> {
    const slots = this.slots;
    for (let i = 1; i < slots.length; i += 2) if (slots[i] !== EMPTY) yield slots[i]!;
  }

  private put(hash: number, node: number): void {
    const slots = this.slots;
    let slot = hash & this.mask;
    while (slots[2 * slot + 1] !== EMPTY) slot = (slot + 1) & this.mask;
    slots[2 * slot] = hash;
    slots[2 * slot + 1] = node;
  }

  private resize(count: number): void {
    const old = this.slots;
    this.slots = new Int32Array(2 * count).fill(EMPTY);
    this.mask = count - 1;
    for (let i = 0; i < old.length; i += 2) if (old[i + 1] !== EMPTY) this.put(old[i]!, old[i + 1]!);
  }
}

/** A slot's node when the slot is free (node numbers are >= 0). */
const EMPTY = -1;
/** Slots of a table at least (a power of two). */
const MIN_SLOTS = 8;

/**
 * FNV-1a of the id's UTF-16 code units from a seed drawn once a process, then murmur3's finalizer,
 * whose low bits pick the slot: ids are the tenants' to choose, and the seed keeps one tenant from
 * choosing ids that share a slot on every node.
 */
function hashOf(id: string): number {
  let hash = SEED;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return hash ^ (hash >>> 16);
}
const SEED = (0x811c9dc5 ^ ((Math.random() * 0x100000000) >>> 0)) | 0;
