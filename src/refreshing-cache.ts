/**
 * Values loaded by key and used for at most `maxAgeMs` after their load began. Concurrent callers
 * share one load. Once a value is half that old, the next caller starts a reload in the background
 * and still gets the value, so steady traffic never waits for a reload (a periodic wait would show
 * in every latency percentile above it); past `maxAgeMs` callers wait for a new load. A load that
 * fails or finds nothing (null) is not kept.
 */
export class RefreshingCache<K, V> {
  private readonly entries = new Map<K, { value: Promise<V | null>; loadedAt: number; refreshing: boolean }>();

  constructor(
    private readonly load: (key: K) => Promise<V | null>,
    private readonly maxAgeMs: number,
  ) {}

  /** The value for `key`, from a load that began less than `maxAgeMs` ago (0: one that begins now). */
  get(key: K, { maxAgeMs = this.maxAgeMs } = {}): Promise<V | null> {
    const now = Date.now();
    const entry = this.entries.get(key);
    if (entry && now - entry.loadedAt < Math.min(maxAgeMs, this.maxAgeMs)) {
      if (!entry.refreshing && now - entry.loadedAt >= this.maxAgeMs / 2) this.refresh(key, entry);
      return entry.value;
    }
    const loading = { value: this.load(key), loadedAt: now, refreshing: false };
    this.entries.set(key, loading);
    const drop = () => {
      if (this.entries.get(key) === loading) this.entries.delete(key);
    };
    loading.value.then((value) => value ?? drop(), drop);
    return loading.value;
  }

  /** True when `get` would answer without a load of its own (a fresh value, or a load under way). */
  has(key: K): boolean {
    const entry = this.entries.get(key);
    return entry !== undefined && Date.now() - entry.loadedAt < this.maxAgeMs;
  }

  private refresh(key: K, stale: { refreshing: boolean }): void {
    stale.refreshing = true;
    const startedAt = Date.now();
    this.load(key).then(
      (value) => {
        if (this.entries.get(key) !== stale) return; // deleted or replaced meanwhile
        if (value === null) this.entries.delete(key);
        else this.entries.set(key, { value: Promise.resolve(value), loadedAt: startedAt, refreshing: false });
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
