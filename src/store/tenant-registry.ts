import type { Logger } from 'pino';
import type { WallClock } from '../engine/grant-window.ts';
import type { HeldTenant } from './held-tenant.ts';
import { decayedUses, displaced, MIN_USES_TO_HOLD } from './hold-policy.ts';
import { UnheldTenants } from './unheld-tenants.ts';

/** How long what a load found a tenant to weigh is trusted, and a tenant too large is not loaded again. */
const RETRY_TOO_LARGE_MS = 10 * 60_000;
/** A tenant the policy left out is considered again at most this often (each decision sorts the tenants held). */
const RECONSIDER_MS = 1_000;

/**
 * The tenants a process holds, and those it was asked for and does not hold (UnheldTenants), with
 * the policy of src/store/hold-policy.ts applied to them: a tenant's second check starts its load,
 * the room left goes to the first, then the tenants used most for what they weigh displace those
 * used least. Every decision is logged.
 * HeldTenants loads, catches up and answers; this says who is held.
 */
export class TenantRegistry {
  private readonly held = new Map<string, HeldTenant>();
  readonly unheld: UnheldTenants;

  constructor(
    /** Grants and agents held over all tenants (GRANTD_GRAPH_MEMORY); 0: none. */
    private readonly maxGrants: number,
    private readonly clock: WallClock,
    private readonly halfLifeMs: number,
    private readonly logger: Logger,
  ) {
    this.unheld = new UnheldTenants(clock, halfLifeMs);
  }

  get(tenantId: string): HeldTenant | undefined {
    return this.held.get(tenantId);
  }

  has(tenantId: string): boolean {
    return this.held.has(tenantId);
  }

  clear(): void {
    this.held.clear();
  }

  /** Grants and agents held in memory over all tenants. */
  get size(): number {
    let held = 0;
    for (const tenant of this.held.values()) held += tenant.index.size + tenant.agents.size;
    return held;
  }

  /** Whether the tenants held fit in `maxGrants`. */
  fits(): boolean {
    return this.weight <= this.maxGrants;
  }

  weightOf(tenant: HeldTenant): number {
    return tenant.index.footprint + tenant.agents.size;
  }

  usesNow(tenant: HeldTenant): number {
    return decayedUses(tenant.uses, tenant.lastUsed, this.clock.now(), this.halfLifeMs);
  }

  /**
   * Counts a use of a tenant not held; whether to load it: not while `loading` it already, nor before
   * its uses reach MIN_USES_TO_HOLD, nor when refused lately or the policy would not hold it now
   * (what it weighs is known from an earlier load; else the load counts its grants first).
   */
  usedWhileNotHeld(tenantId: string, loading: boolean): boolean {
    const unheld = this.unheld.use(tenantId);
    // A tenant's first check in a while is answered by PostgreSQL; the next starts its load (hold-policy.ts).
    if (this.maxGrants === 0 || loading || unheld.uses < MIN_USES_TO_HOLD || this.unheld.isRefused(tenantId)) return false;
    // A tenant's grants change while it is not held: what a load counted is trusted for a while.
    const weight = this.unheld.weightWithin(unheld, RETRY_TOO_LARGE_MS);
    const refused = weight !== null && this.displacedBy(tenantId, weight) === null;
    if (refused) this.unheld.refuse(tenantId, RECONSIDER_MS);
    return !refused;
  }

  /** The held tenants that holding `tenantId` at `weight` would displace, or null when the policy leaves it out (hold-policy.ts). */
  displacedBy(tenantId: string, weight: number): string[] | null {
    // Fitting in the room left displaces nobody: the held tenants' uses are weighed only when it does not.
    if (weight <= this.maxGrants - this.weight) return [];
    const candidate = { tenantId, weight, uses: this.unheld.usesOf(tenantId) };
    const others = [...this.held].map(([id, tenant]) => ({ tenantId: id, weight: this.weightOf(tenant), uses: this.usesNow(tenant) }));
    return displaced(candidate, others, this.maxGrants);
  }

  /** Whether a load of the tenant at `weight` goes on: what it weighs is kept for later decisions, a refusal logged. */
  admits(tenantId: string, weight: number): boolean {
    this.unheld.weighed(tenantId, weight);
    const uses = Number(this.unheld.usesOf(tenantId).toFixed(2));
    if (weight > this.maxGrants) {
      this.unheld.refuse(tenantId, RETRY_TOO_LARGE_MS);
      this.logger.info({ tenantId, weight, uses, why: 'it weighs more than GRANTD_GRAPH_MEMORY' }, 'grants in memory: tenant not held');
      return false;
    }
    if (this.displacedBy(tenantId, weight) === null) {
      this.unheld.refuse(tenantId, RECONSIDER_MS);
      this.logger.info({ tenantId, weight, uses, why: 'the tenants held are used more for what they weigh' }, 'grants in memory: tenant not held');
      return false;
    }
    return true;
  }

  /** Holds the tenant, dropping those it displaces (`displacedBy`'s answer). */
  hold(tenantId: string, tenant: HeldTenant, displacing: readonly string[]): void {
    for (const victim of displacing) this.drop(victim, 'displaced', { by: tenantId });
    this.unheld.take(tenantId);
    this.held.set(tenantId, tenant);
  }

  /** Stops holding the tenant, its uses and weight kept for later decisions; `why` (and `more`) logged. */
  drop(tenantId: string, why: string, more: Record<string, unknown> = {}): false {
    const tenant = this.held.get(tenantId);
    if (!tenant) return false;
    this.held.delete(tenantId);
    const weight = this.weightOf(tenant);
    const uses = this.usesNow(tenant);
    this.unheld.dropped(tenantId, tenant, weight);
    this.logger.info({ tenantId, weight, uses: Number(uses.toFixed(2)), why, ...more }, 'grants in memory: tenant dropped');
    return false;
  }

  /** Drops the tenants held but not used since `before`. */
  dropIdle(before: number): void {
    for (const [tenantId, tenant] of this.held) if (tenant.lastUsed < before) this.drop(tenantId, 'idle');
  }

  /** What the tenants held weigh against `maxGrants`: their grants, agents, and the names their indexes intern. */
  private get weight(): number {
    let weight = 0;
    for (const tenant of this.held.values()) weight += this.weightOf(tenant);
    return weight;
  }
}
