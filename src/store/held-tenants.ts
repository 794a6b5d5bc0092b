import type pg from 'pg';
import type { Logger } from 'pino';
import type { TenantWatch } from './change-watch.ts';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import { WorkMeter } from '../engine/work-meter.ts';
import type { HeldTenant } from './held-tenant.ts';
import { decayedUses, displaced, MIN_USES_TO_EVICT, USES_HALF_LIFE_MS } from './hold-policy.ts';
import { LoadTurns } from './load-turns.ts';
import { LogReplayer, type ReplayOptions } from './log-replayer.ts';
import { TenantLoader } from './tenant-loader.ts';
import { countUse, UnheldTenants } from './unheld-tenants.ts';

export type { HeldTenant } from './held-tenant.ts';

const IDLE_MS = 10 * 60_000;
const RETRY_FAILED_MS = 10_000;
const RETRY_TOO_LARGE_MS = 10 * 60_000;
/** A tenant the policy left out is considered again at most this often (each decision sorts the tenants held). */
const RECONSIDER_MS = 1_000;
/** Loads under way at once: each has a connection of its own and indexes in turns of the event loop. */
const MAX_LOADS = 2;
/** Transactions above the horizon a node replays at most, beside an older one still open. */
const MAX_REPLAYED_AHEAD = 10_000;

export interface HeldTenantsOptions extends ReplayOptions {
  /** Grants and agents held over all tenants (the names the indexes intern counting too); 0: none. */
  maxGrants: number;
  /** How long after its last catch-up began a held tenant may answer. */
  maxAgeMs: number;
  /** Vouches that a tenant's grants and agents have not changed since its last catch-up began: it then answers past `maxAgeMs` (its clock must be Date's). */
  watch?: TenantWatch;
  maxReplayedAhead?: number;
  /** The clock of loads, catch-ups, refusals and idleness: epoch ms (Date's by default; tests move one). */
  clock?: WallClock;
  /** How long a use keeps half its weight in a tenant's uses (USES_HALF_LIFE_MS). */
  usesHalfLifeMs?: number;
}

/**
 * The tenants this process holds in memory (each a HeldTenant: its grants and agents), so that
 * checks are answered without a round trip (MemoryChecker). A tenant is loaded in the background
 * when it is checked, while the database answers (TenantLoader), MAX_LOADS at a time, the most used
 * first; then kept current from the grant log (LogReplayer). Which tenants are held when they do not
 * all fit is the policy of src/store/hold-policy.ts: the room left goes to the first, then the
 * tenants used most for what they weigh displace those used least.
 *
 * Freshness is the answer cache's: a held tenant answers for at most `maxAgeMs` after its last
 * catch-up began (refreshed ahead, off the request path, under steady traffic), or for as long
 * as the change watch vouches that nothing of it changed since, so a write on another node shows
 * within that; after this node's own write (`invalidate`), the next check
 * waits for a catch-up that begins after it, so read-after-write holds. A tenant with more grants
 * than the node may still hold (`maxGrants` over all tenants, an agent counting as a grant) stays
 * in the database.
 */
export class HeldTenants {
  private readonly held = new Map<string, HeldTenant>();
  private readonly unheld: UnheldTenants;
  private readonly loading = new Map<string, Promise<boolean>>();
  /** Loads run MAX_LOADS at a time, the most used of the tenants waiting first. */
  private readonly turns = new LoadTurns(MAX_LOADS, (tenantId) => this.unheld.usesOf(tenantId));
  /** Bumped by this node's writes; a held tenant is current only once it has caught up with its tenant's generation. */
  private readonly generations = new Map<string, number>();
  private readonly clock: WallClock;
  private readonly halfLifeMs: number;
  private readonly loader: TenantLoader;
  private readonly replayer: LogReplayer;
  private closed = false;

  constructor(
    pool: pg.Pool,
    private readonly options: HeldTenantsOptions,
    private readonly logger: Logger,
    /** The process's work in memory (WorkMeter): loads and long replays are their tenant's work, in slices. */
    meter: WorkMeter = new WorkMeter(),
  ) {
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.halfLifeMs = options.usesHalfLifeMs ?? USES_HALF_LIFE_MS;
    this.unheld = new UnheldTenants(this.clock, this.halfLifeMs);
    this.loader = new TenantLoader(pool, meter);
    this.replayer = new LogReplayer(
      pool,
      {
        isHeld: (tenantId, tenant) => this.held.get(tenantId) === tenant,
        drop: (tenantId) => this.drop(tenantId, 'its catch-up failed, or it is gone'),
        reload: (tenantId, why) => this.reload(tenantId, why),
        keeps: (tenantId, tenant) => this.keeps(tenantId, tenant),
        fellBack: (error, tenantId) => this.fellBack(error, tenantId),
      },
      meter,
      this.clock,
      options,
    );
  }

  /** This node changed the tenant's grants (committed): the next check waits for a catch-up. */
  invalidate(tenantId: string): void {
    this.generations.set(tenantId, this.generation(tenantId) + 1);
  }

  /** The tenant's grants and agents when they may answer now, else null (answer from the database). */
  async current(tenantId: string): Promise<HeldTenant | null> {
    const tenant = this.held.get(tenantId);
    if (!tenant) {
      this.usedWhileNotHeld(tenantId);
      return null;
    }
    const ready = this.currentNow(tenantId);
    if (ready) return ready;
    countUse(tenant, this.clock.now(), this.halfLifeMs);
    if (tenant.replaying) return null;
    return (await this.replayer.catchUp(tenantId, tenant, this.generation(tenantId))) ? tenant : null;
  }

  /**
   * The tenant's grants and agents when they are held and current without a catch-up to wait for
   * (a check of them needs no promise); undefined otherwise, when `current` says what to do.
   */
  currentNow(tenantId: string): HeldTenant | undefined {
    const tenant = this.held.get(tenantId);
    if (!tenant || tenant.replaying) return undefined;
    const now = this.clock.now();
    const generation = this.generation(tenantId);
    if (tenant.generation !== generation) return undefined;
    const age = now - tenant.verifiedAt;
    const unchanged = age >= this.options.maxAgeMs / 2 && this.options.watch?.covers(tenantId, tenant.verifiedAt) === true;
    if (age >= this.options.maxAgeMs && !unchanged) return undefined;
    countUse(tenant, now, this.halfLifeMs);
    if (age >= this.options.maxAgeMs / 2 && !unchanged) void this.replayer.catchUp(tenantId, tenant, generation);
    return tenant;
  }

  /** Whether the tenant's grants are held (current or about to be caught up). */
  holds(tenantId: string): boolean {
    return this.held.has(tenantId);
  }

  /** Grants and agents held in memory over all tenants. */
  get size(): number {
    let held = 0;
    for (const tenant of this.held.values()) held += tenant.index.size + tenant.agents.size;
    return held;
  }

  /** Holds the tenant's grants now unless they do not fit; resolves true once held. */
  load(tenantId: string): Promise<boolean> {
    if (this.held.has(tenantId)) return Promise.resolve(true);
    if (this.options.maxGrants === 0 || this.closed) return Promise.resolve(false);
    let loading = this.loading.get(tenantId);
    if (!loading) {
      loading = this.turns
        .run(tenantId, () => this.loadNow(tenantId))
        .then(
          () => this.held.has(tenantId),
          (error: Error) => {
            this.unheld.refuse(tenantId, RETRY_FAILED_MS);
            if (!this.closed) this.fellBack(error, tenantId);
            return false;
          },
        )
        .finally(() => this.loading.delete(tenantId));
      this.loading.set(tenantId, loading);
    }
    return loading;
  }

  /** Ends the loads under way and forgets every tenant; checks then go to the database. */
  async close(): Promise<void> {
    this.closed = true;
    this.held.clear();
    this.turns.releaseAll();
    await this.loader.close();
  }

  /** What the tenants held weigh against `maxGrants`: their grants, agents, and the names their indexes intern. */
  private get weight(): number {
    let weight = 0;
    for (const tenant of this.held.values()) weight += this.weightOf(tenant);
    return weight;
  }

  private weightOf(tenant: HeldTenant): number {
    return tenant.index.footprint + tenant.agents.size;
  }

  private usesNow(tenant: HeldTenant, now: number): number {
    return decayedUses(tenant.uses, tenant.lastUsed, now, this.halfLifeMs);
  }

  private get maxReplayedAhead(): number {
    return this.options.maxReplayedAhead ?? MAX_REPLAYED_AHEAD;
  }

  private generation(tenantId: string): number {
    return this.generations.get(tenantId) ?? 0;
  }

  /**
   * Counts a use of a tenant not held, and starts loading it in the background unless a load is
   * under way, it was refused lately, or the policy would not hold it now: what it weighs is known
   * from an earlier load; else it may take the room left, or displace others once used enough.
   */
  private usedWhileNotHeld(tenantId: string): void {
    const unheld = this.unheld.use(tenantId);
    if (this.options.maxGrants === 0 || this.loading.has(tenantId) || this.unheld.isRefused(tenantId)) return;
    // A tenant's grants change while it is not held: what a load counted is trusted for a while.
    const weight = this.unheld.weightWithin(unheld, RETRY_TOO_LARGE_MS);
    // Too few uses to displace anyone: only the room left may take it (no tenant held sorted).
    const refused =
      unheld.uses < MIN_USES_TO_EVICT
        ? this.weight + (weight ?? 1) > this.options.maxGrants
        : weight !== null && this.displacedBy(tenantId, weight) === null;
    if (refused) this.unheld.refuse(tenantId, RECONSIDER_MS);
    else void this.load(tenantId);
  }

  /** The held tenants that holding `tenantId` at `weight` would displace, or null when the policy leaves it out (hold-policy.ts). */
  private displacedBy(tenantId: string, weight: number): string[] | null {
    const now = this.clock.now();
    const candidate = { tenantId, weight, uses: this.unheld.usesOf(tenantId) };
    const others = [...this.held].map(([id, tenant]) => ({ tenantId: id, weight: this.weightOf(tenant), uses: this.usesNow(tenant, now) }));
    return displaced(candidate, others, this.options.maxGrants);
  }

  /** Whether a load of the tenant at `weight` goes on: what it weighs is kept for later decisions, a refusal logged. */
  private admits(tenantId: string, weight: number): boolean {
    this.unheld.weighed(tenantId, weight);
    const uses = Number(this.unheld.usesOf(tenantId).toFixed(2));
    if (weight > this.options.maxGrants) {
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

  /** Reads the tenant if the policy would hold it (TenantLoader), and holds it if it still would, displacing whom the policy says. */
  private async loadNow(tenantId: string): Promise<void> {
    if (this.closed) return;
    this.forgetUnused();
    const generation = this.generation(tenantId);
    const startedAt = this.clock.now();
    const read = await this.loader.read(tenantId, this.options.maxGrants, this.maxReplayedAhead, (weight) => this.admits(tenantId, weight));
    if (read === null || 'notAdmitted' in read) return;
    if ('heldBack' in read) return this.refuseWhileHeldBack(tenantId, read.heldBack);
    if ('tooLarge' in read) {
      this.admits(tenantId, this.options.maxGrants + 1);
      return;
    }
    const { index, agents, horizon, replayed } = read;
    const weight = index.footprint + agents.size;
    // Tenants loaded or used meanwhile may have changed the decision.
    if (!this.admits(tenantId, weight)) return;
    const now = this.clock.now();
    for (const victim of this.displacedBy(tenantId, weight)!) this.drop(victim, 'displaced', { by: tenantId });
    const uses = this.unheld.usesOf(tenantId);
    const unheld = this.unheld.take(tenantId)!;
    this.held.set(tenantId, {
      index,
      agents,
      horizon,
      replayed: new Set(replayed),
      verifiedAt: startedAt,
      generation,
      lastUsed: unheld.lastUsed,
      uses: unheld.uses,
      pending: null,
      replaying: false,
    });
    this.logger.info(
      { tenantId, grants: index.size, agents: agents.size, weight, uses: Number(uses.toFixed(2)), ms: now - startedAt },
      'grants in memory: tenant loaded',
    );
  }

  /**
   * The held copy can no longer be brought up to date: drop it and load the tenant afresh in the
   * background, whatever refusal an earlier load left (the tenant fitted and was held until now).
   */
  private reload(tenantId: string, why: string): void {
    this.drop(tenantId, 'reloading');
    this.unheld.forgive(tenantId);
    this.logger.info({ tenantId, why }, 'grants in memory: reloading the tenant; the database answers meanwhile');
    if (this.options.maxGrants > 0) void this.load(tenantId);
  }

  /**
   * A catch-up brought the copy up to the log: it stays held if it is not held back and, when the
   * tenants held no longer fit, the policy would hold it as it weighs now, displacing others.
   */
  private keeps(tenantId: string, tenant: HeldTenant): boolean {
    if (tenant.replayed.size > this.maxReplayedAhead) {
      this.refuseWhileHeldBack(tenantId, tenant.replayed.size);
      return this.drop(tenantId, 'held back');
    }
    if (this.weight <= this.options.maxGrants) return true;
    this.drop(tenantId, 'grew past the room');
    const displacing = this.displacedBy(tenantId, this.weightOf(tenant));
    if (displacing === null) return false;
    for (const victim of displacing) this.drop(victim, 'displaced', { by: tenantId });
    this.unheld.take(tenantId);
    this.held.set(tenantId, tenant);
    this.logger.info({ tenantId, weight: this.weightOf(tenant) }, 'grants in memory: tenant loaded');
    return true;
  }

  /**
   * A writing transaction left open pins the horizon, so every catch-up would read and skip all
   * that committed since: past a bound, the database answers until the horizon moves on.
   */
  private refuseWhileHeldBack(tenantId: string, transactions: number): void {
    this.unheld.refuse(tenantId, RETRY_FAILED_MS);
    this.logger.warn({ tenantId, transactions }, 'grants in memory: an open transaction holds the grant log back; answering from the database');
  }

  private fellBack(error: Error, tenantId: string): void {
    this.logger.warn({ err: { message: error.message }, tenantId }, 'grants in memory: falling back to the database');
  }

  /** Stops holding the tenant, its uses and weight kept for later decisions; `why` (and `more`) logged. */
  private drop(tenantId: string, why: string, more: Record<string, unknown> = {}): false {
    const tenant = this.held.get(tenantId);
    if (!tenant) return false;
    this.held.delete(tenantId);
    const weight = this.weightOf(tenant);
    const uses = this.usesNow(tenant, this.clock.now());
    this.unheld.dropped(tenantId, tenant, weight);
    this.logger.info({ tenantId, weight, uses: Number(uses.toFixed(2)), why, ...more }, 'grants in memory: tenant dropped');
    return false;
  }

  /**
   * Before a load: tenants held but not used for IDLE_MS make room (they would need a long
   * catch-up anyway), and tenants neither held nor loading whose uses have all but decayed, and
   * refusals past, are forgotten.
   */
  private forgetUnused(): void {
    const now = this.clock.now();
    for (const [tenantId, tenant] of this.held) {
      if (tenant.lastUsed < now - IDLE_MS) this.drop(tenantId, 'idle');
    }
    this.unheld.forgetUnused((tenantId) => this.loading.has(tenantId));
  }
}
