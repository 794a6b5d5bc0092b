import type { WallClock } from '../engine/grant-window.ts';
import { decayedUses } from './hold-policy.ts';

/** Uses below which a tenant neither held nor loading is forgotten (about 7 half-lives without a check). */
const FORGOTTEN_USES = 0.01;

/** A tenant checked on this node and not held: its uses, and what it weighed when a load last counted it. */
export interface UnheldTenant {
  lastUsed: number;
  uses: number;
  weight: number | null;
  weighedAt: number;
}

/** Counts one use of a tenant, held or not, at `now` (each use counts 1 and halves every half-life). */
export function countUse(tenant: { lastUsed: number; uses: number }, now: number, halfLifeMs: number): void {
  tenant.uses = decayedUses(tenant.uses, tenant.lastUsed, now, halfLifeMs) + 1;
  tenant.lastUsed = now;
}

/**
 * What HeldTenants remembers of the tenants it does not hold, for its policy (hold-policy.ts): their
 * uses, what a load last found them to weigh, and until when a load of each is refused (too large,
 * left out by the policy, or its load failed).
 */
export class UnheldTenants {
  private readonly tenants = new Map<string, UnheldTenant>();
  private readonly refusedUntil = new Map<string, number>();

  constructor(
    private readonly clock: WallClock,
    private readonly halfLifeMs: number,
  ) {}

  /** Counts a use of the tenant; its record. */
  use(tenantId: string): UnheldTenant {
    const now = this.clock.now();
    const tenant = this.recordOf(tenantId, now);
    countUse(tenant, now, this.halfLifeMs);
    return tenant;
  }

  /** The tenant's uses now (0: not known). */
  usesOf(tenantId: string): number {
    const tenant = this.tenants.get(tenantId);
    return tenant ? decayedUses(tenant.uses, tenant.lastUsed, this.clock.now(), this.halfLifeMs) : 0;
  }

  /** A load found the tenant to weigh `weight` now. */
  weighed(tenantId: string, weight: number): void {
    const now = this.clock.now();
    const tenant = this.recordOf(tenantId, now);
    tenant.weight = weight;
    tenant.weighedAt = now;
  }

  /** The tenant's weight if a load counted it within the last `trustMs` (its grants change while it is not held). */
  weightWithin(tenant: UnheldTenant, trustMs: number): number | null {
    return tenant.weighedAt > this.clock.now() - trustMs ? tenant.weight : null;
  }

  /** No load of the tenant for `ms`. */
  refuse(tenantId: string, ms: number): void {
    this.refusedUntil.set(tenantId, this.clock.now() + ms);
  }

  isRefused(tenantId: string): boolean {
    return (this.refusedUntil.get(tenantId) ?? 0) > this.clock.now();
  }

  forgive(tenantId: string): void {
    this.refusedUntil.delete(tenantId);
  }

  /** The tenant is held now: its record, which it no longer needs here. */
  take(tenantId: string): UnheldTenant | undefined {
    const tenant = this.tenants.get(tenantId);
    this.tenants.delete(tenantId);
    return tenant;
  }

  /** The tenant was held until now, weighing `weight`: its uses carry on. */
  dropped(tenantId: string, used: { lastUsed: number; uses: number }, weight: number): void {
    this.tenants.set(tenantId, { lastUsed: used.lastUsed, uses: used.uses, weight, weighedAt: this.clock.now() });
  }

  /** Forgets tenants whose uses have all but decayed, but those `loading`, and refusals past. */
  forgetUnused(loading: (tenantId: string) => boolean): void {
    const now = this.clock.now();
    for (const [tenantId, tenant] of this.tenants) {
      if (decayedUses(tenant.uses, tenant.lastUsed, now, this.halfLifeMs) < FORGOTTEN_USES && !loading(tenantId)) this.tenants.delete(tenantId);
    }
    for (const [tenantId, until] of this.refusedUntil) if (until <= now) this.refusedUntil.delete(tenantId);
  }

  private recordOf(tenantId: string, now: number): UnheldTenant {
    let tenant = this.tenants.get(tenantId);
    if (!tenant) this.tenants.set(tenantId, (tenant = { lastUsed: now, uses: 0, weight: null, weighedAt: now }));
    return tenant;
  }
}
