/**
 * Which tenants a process holds in memory when they do not all fit (docs/consistency.md#grants-held-in-memory,
 * docs/decisions.md#which-tenants-are-held): pure decisions over weights (what a tenant counts
 * against GRANTD_GRAPH_MEMORY) and uses (its checks, each counting 1 and halving every half-life),
 * which HeldTenants (src/store/held-tenants.ts) applies.
 */

/** How long a use keeps half its weight in a tenant's uses. */
export const USES_HALF_LIFE_MS = 60_000;
/**
 * Decayed uses a tenant needs before a check starts its load, and before it may make others leave:
 * two checks within a half-life (a second check a half-life after the first makes 1.5). One check
 * alone says little of a tenant's rate, and a load costs the node and PostgreSQL far more than the
 * one check it would answer.
 */
export const MIN_USES_TO_HOLD = 1.5;
/** What a tenant displaces must be used this many times less than it, so that two alike do not push each other out in turn. */
export const EVICTION_ADVANTAGE = 2;

/** Uses counted at `since`, decayed to `now`. */
export function decayedUses(uses: number, since: number, now: number, halfLifeMs = USES_HALF_LIFE_MS): number {
  return now <= since ? uses : uses * 2 ** ((since - now) / halfLifeMs);
}

/** A tenant held, or asking to be: what it weighs and its uses now. */
export interface TenantUse {
  tenantId: string;
  weight: number;
  uses: number;
}

/**
 * What holding `candidate` takes: the held tenants it displaces (none when it fits in the room
 * left), or null when it is not to be held. The room left goes to whichever tenant asks first
 * (a check asks once the tenant has MIN_USES_TO_HOLD uses: TenantRegistry.usedWhileNotHeld).
 * Past it, the held tenants used least for what they weigh (uses / weight) make room, in that
 * order, and only for a candidate used at least MIN_USES_TO_HOLD times and EVICTION_ADVANTAGE
 * times more than all they displace together: a tenant held answers its checks from memory, so what
 * the node gains and loses is checks answered there. So a big tenant seldom checked never displaces
 * many small ones checked often, nor a small one seldom checked a big one checked more.
 */
export function displaced(candidate: TenantUse, held: readonly TenantUse[], capacity: number): string[] | null {
  if (candidate.weight > capacity) return null;
  const free = capacity - held.reduce((sum, tenant) => sum + tenant.weight, 0);
  if (candidate.weight <= free) return [];
  if (candidate.uses < MIN_USES_TO_HOLD) return null;
  const byDensity = [...held].sort((a, b) => a.uses / a.weight - b.uses / b.weight);
  const victims: string[] = [];
  let room = free;
  let usesGivenUp = 0;
  for (const tenant of byDensity) {
    if (room >= candidate.weight) break;
    victims.push(tenant.tenantId);
    room += tenant.weight;
    usesGivenUp += tenant.uses;
    if (usesGivenUp * EVICTION_ADVANTAGE >= candidate.uses) return null;
  }
  return room >= candidate.weight ? victims : null;
}
