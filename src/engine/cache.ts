/**
 * Per-tenant memo of answers derived from the tenant's data. `invalidate` (this node wrote) drops a
 * tenant's entries at once; entries also expire after `maxAgeMs`, which bounds how long a write made
 * on another node can go unseen. An answer computed while a write happened is never stored: callers
 * take the generation before reading and store with it.
 */
export class TenantCache<V> {
  private readonly tenants = new Map<string, { generation: number; entries: Map<string, { value: V; at: number }> }>();

  constructor(
    private readonly maxAgeMs: number,
    private readonly maxEntriesPerTenant: number,
  ) {}

  private tenant(tenantId: string) {
    let tenant = this.tenants.get(tenantId);
    if (!tenant) {
      tenant = { generation: 0, entries: new Map() };
      this.tenants.set(tenantId, tenant);
    }
    return tenant;
  }

  generation(tenantId: string): number {
    return this.tenant(tenantId).generation;
  }

  get(tenantId: string, key: string, now = Date.now()): V | undefined {
    const entry = this.tenants.get(tenantId)?.entries.get(key);
    return entry && now - entry.at < this.maxAgeMs ? entry.value : undefined;
  }

  set(tenantId: string, key: string, value: V, generation: number, now = Date.now()): void {
    const tenant = this.tenant(tenantId);
    if (tenant.generation !== generation) return;
    tenant.entries.delete(key);
    tenant.entries.set(key, { value, at: now });
    if (tenant.entries.size > this.maxEntriesPerTenant) tenant.entries.delete(tenant.entries.keys().next().value!);
  }

  invalidate(tenantId: string): void {
    const tenant = this.tenant(tenantId);
    tenant.generation++;
    tenant.entries.clear();
  }
}
