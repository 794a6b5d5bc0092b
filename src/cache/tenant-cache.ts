import { LRUCache } from 'lru-cache';

/**
 * Memo of answers derived from tenants' data, shared by all tenants and bounded (least recently
 * used entries go first). `invalidate` (this node wrote) makes a tenant's entries unusable at
 * once; entries also expire after `maxAgeMs`, which bounds how long a write made on another node
 * can go unseen. An answer computed while a write happened is never stored: callers take the
 * generation before reading and store with it.
 */
export class TenantCache<V> {
  private readonly entries: LRUCache<string, { value: V; generation: number }>;
  /** Bumped by every invalidation; entries of an older generation are ignored until evicted. */
  private readonly generations = new Map<string, number>();

  constructor({ maxAgeMs, maxEntries, clock }: { maxAgeMs: number; maxEntries: number; clock?: { now(): number } }) {
    this.entries = new LRUCache({ max: maxEntries, ttl: maxAgeMs, ...(clock ? { perf: clock, ttlResolution: 0 } : {}) });
  }

  generation(tenantId: string): number {
    return this.generations.get(tenantId) ?? 0;
  }

  get(tenantId: string, key: string): V | undefined {
    const entry = this.entries.get(`${tenantId}\0${key}`);
    return entry?.generation === this.generation(tenantId) ? entry.value : undefined;
  }

  set(tenantId: string, key: string, value: V, generation: number): void {
    if (generation === this.generation(tenantId)) this.entries.set(`${tenantId}\0${key}`, { value, generation });
  }

  invalidate(tenantId: string): void {
    this.generations.set(tenantId, this.generation(tenantId) + 1);
  }
}
