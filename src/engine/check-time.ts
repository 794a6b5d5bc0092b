/**
 * Shares a process's time spent on checks between tenants. Each tenant's check time is kept as a
 * sum that halves every `halfLifeMs`, so that it tells the share of the recent past it took. A tenant
 * over `share` while another tenant's checks were asked for in the last CONTENDED_MS waits before
 * its next slice of checks, until it is back to its share; a tenant alone never waits, as the time
 * is nobody else's. So a tenant's bulks of costly checks cannot take the cores from the others'.
 */
export class CheckTimeShares {
  private readonly tenants = new Map<string, { spent: number; at: number; askedAt: number }>();
  /** The decayed sum at which a tenant is at its share. */
  private readonly fullShare: number;
  private lastSweep: number;

  constructor(
    share = DEFAULT_SHARE,
    private readonly halfLifeMs = 500,
    private readonly clock: { now(): number } = performance,
  ) {
    // Spending a fraction r of the time steadily, the sum settles at r * halfLife / ln 2.
    this.fullShare = (share * halfLifeMs) / Math.LN2;
    this.lastSweep = clock.now();
  }

  /** The turns of one tenant's checks. */
  of(tenantId: string): CheckTurns {
    return { wait: () => this.wait(tenantId), spent: (ms) => this.spent(tenantId, ms) };
  }

  /** How long the tenant's next slice of checks waits (ms), 0 for at once; the tenant is asking now. */
  wait(tenantId: string): number {
    const now = this.clock.now();
    const tenant = this.decayed(tenantId, now);
    tenant.askedAt = now;
    if (tenant.spent <= this.fullShare || !this.othersAsked(tenantId, now)) return 0;
    return Math.min(MAX_WAIT_MS, this.halfLifeMs * Math.log2(tenant.spent / this.fullShare));
  }

  /** The tenant's checks took `ms`. */
  spent(tenantId: string, ms: number): void {
    this.decayed(tenantId, this.clock.now()).spent += ms;
  }

  /** The tenant's recent check time (the decayed sum, ms), 0 for one not seen lately: who is served first among runs that wait. */
  recent(tenantId: string): number {
    const tenant = this.tenants.get(tenantId);
    return tenant === undefined ? 0 : this.decay(tenant, this.clock.now());
  }

  /** The tenant's sum as it has halved since it was last brought to date. */
  private decay(tenant: { spent: number; at: number }, now: number): number {
    return tenant.spent * 2 ** (-(now - tenant.at) / this.halfLifeMs);
  }

  private decayed(tenantId: string, now: number): { spent: number; at: number; askedAt: number } {
    let tenant = this.tenants.get(tenantId);
    if (tenant === undefined) this.tenants.set(tenantId, (tenant = { spent: 0, at: now, askedAt: now }));
    tenant.spent = this.decay(tenant, now);
    tenant.at = now;
    return tenant;
  }

  private othersAsked(tenantId: string, now: number): boolean {
    this.sweep(now);
    for (const [other, { askedAt }] of this.tenants) if (other !== tenantId && now - askedAt < CONTENDED_MS) return true;
    return false;
  }

  /** Tenants quiet for long hold nothing worth remembering. */
  private sweep(now: number): void {
    if (now - this.lastSweep < FORGET_AFTER_MS) return;
    this.lastSweep = now;
    for (const [tenantId, { askedAt }] of this.tenants) if (now - askedAt > FORGET_AFTER_MS) this.tenants.delete(tenantId);
  }
}

/** How a bulk of checks takes its turns: `wait` before a slice (ms, 0 to go on), `spent` after it. */
export interface CheckTurns {
  wait(): number;
  spent(ms: number): void;
}

/** The share of a process's check time a tenant keeps while others' checks wait. */
export const DEFAULT_SHARE = 0.25;
/** Another tenant asked within this long: the time is contended. */
const CONTENDED_MS = 1_000;
/** The longest a slice waits at once; it is asked again after. */
const MAX_WAIT_MS = 100;
const FORGET_AFTER_MS = 10_000;
