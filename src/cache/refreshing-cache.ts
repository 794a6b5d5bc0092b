import { LRUCache } from 'lru-cache';

interface Entry<V> {
  value: Promise<V | null>;
  loadedAt: number;
  refreshing: boolean;
  /** What `value` resolved to, once it has: the next load of the key is given it. */
  loaded?: V;
  /** When the loaded value stops being valid by itself (an access token's expiry), in ms since the epoch; never when undefined. */
  expiresAt?: number;
}

/**
 * Values loaded by key and used for at most `maxAgeMs` after their load began. Concurrent callers
 * share one load. Once a value is half that old, the next caller starts a reload in the background
 * and still gets the value, so steady traffic never waits for a reload (a periodic wait would show
 * in every latency percentile above it); past `maxAgeMs` callers wait for a new load. A load that
 * fails or finds nothing (null) is not kept. At most `maxEntries` keys are held, the least recently
 * used going first. A load is given the value it replaces, if any, to reuse what has not changed.
 * A value that says when it expires (`expiryOf`) is not used from that instant on: the next caller
 * waits for a load, which finds it gone.
 */
export class RefreshingCache<K extends NonNullable<unknown>, V> {
  private readonly entries: LRUCache<K, Entry<V>>;

  constructor(
    private readonly load: (key: K, previous: V | undefined) => Promise<V | null>,
    private readonly maxAgeMs: number,
    maxEntries = 100_000,
    private readonly expiryOf: (value: V) => number | undefined = () => undefined,
    /**
     * Whether a loaded value is known unchanged since its load began (the change watch's word,
     * src/store/change-watch.ts): then it is used past `maxAgeMs`, and not reloaded ahead.
     */
    private readonly unchanged: (key: K, value: V, loadedAt: number) => boolean = () => false,
  ) {
    this.entries = new LRUCache({ max: maxEntries });
  }

  /** The value for `key`, from a load that began less than `maxAgeMs` ago (0: one that begins now). */
  get(key: K, { maxAgeMs = this.maxAgeMs } = {}): Promise<V | null> {
    const now = Date.now();
    const entry = this.entries.get(key);
    if (entry && this.fresh(key, entry, now, maxAgeMs)) {
      this.refreshIfHalfAged(key, entry, now);
      return entry.value;
    }
    const loading: Entry<V> = { value: this.load(key, entry?.loaded), loadedAt: now, refreshing: false };
    this.entries.set(key, loading);
    const drop = () => {
      if (this.entries.peek(key) === loading) this.entries.delete(key);
    };
    loading.value.then((value) => (value === null ? drop() : this.settle(loading, value)), drop);
    return loading.value;
  }

  /**
   * What `get` would resolve to, when it is a value already loaded and fresh: given at once, with
   * no promise to wait for (a request answered from memory need not wait a turn of the event loop).
   * Undefined otherwise; then `get` loads it.
   */
  loadedNow(key: K): V | undefined {
    const now = Date.now();
    const entry = this.entries.get(key);
    if (entry?.loaded === undefined || !this.fresh(key, entry, now, this.maxAgeMs)) return undefined;
    this.refreshIfHalfAged(key, entry, now);
    return entry.loaded;
  }

  /** True when `get` would answer without a load of its own (a fresh value, or a load under way). */
  has(key: K): boolean {
    const entry = this.entries.peek(key);
    return entry !== undefined && this.fresh(key, entry, Date.now(), this.maxAgeMs);
  }

  /**
   * Whether an entry may still be used: its load began less than `maxAgeMs` ago and its value has not
   * expired. A load that began "later" than now (the wall clock was set back since) has no age one
   * can trust: it is not fresh, or a key revoked after the clock went back would be served as verified.
   * Past that age, a value known unchanged is still fresh, unless the caller asked for a load newer
   * than the cache's own bound (a load that begins now, or a schema rechecked for a namespace it lacks).
   */
  private fresh(key: K, entry: Entry<V>, now: number, maxAgeMs: number): boolean {
    const age = now - entry.loadedAt;
    if (age < 0 || now >= entry.expiresAt!) return false;
    return age < Math.min(maxAgeMs, this.maxAgeMs) || (maxAgeMs >= this.maxAgeMs && this.knownUnchanged(key, entry));
  }

  private knownUnchanged(key: K, entry: Entry<V>): boolean {
    return entry.loaded !== undefined && this.unchanged(key, entry.loaded, entry.loadedAt);
  }

  private refreshIfHalfAged(key: K, entry: Entry<V>, now: number): void {
    if (!entry.refreshing && now - entry.loadedAt >= this.maxAgeMs / 2 && !this.knownUnchanged(key, entry)) this.refresh(key, entry);
  }

  private settle(entry: Entry<V>, value: V): void {
    entry.loaded = value;
    entry.expiresAt = this.expiryOf(value);
  }

  private refresh(key: K, stale: Entry<V>): void {
    stale.refreshing = true;
    const startedAt = Date.now();
    this.load(key, stale.loaded).then(
      (value) => {
        if (this.entries.peek(key) !== stale) return; // deleted or replaced meanwhile
        if (value === null) this.entries.delete(key);
        else
          this.entries.set(key, {
            value: Promise.resolve(value),
            loadedAt: startedAt,
            refreshing: false,
            loaded: value,
            expiresAt: this.expiryOf(value),
          });
      },
      // Keep serving the value until it is too old; then a caller's own load reports the failure.
      () => {
        stale.refreshing = false;
      },
    );
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
