import type pg from 'pg';
import type { Logger } from 'pino';
import type { TenantWatch } from './change-watch.ts';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import { WorkMeter } from '../engine/work-meter.ts';
import type { HeldTenant } from './held-tenant.ts';
import { USES_HALF_LIFE_MS } from './hold-policy.ts';
import { LoadTurns } from './load-turns.ts';
import { LogReplayer, type ReplayOptions } from './log-replayer.ts';
import { TenantLoader } from './tenant-loader.ts';
import { TenantRegistry } from './tenant-registry.ts';
import { countUse } from './unheld-tenants.ts';

export type { HeldTenant } from './held-tenant.ts';

const IDLE_MS = 10 * 60_000;
const RETRY_FAILED_MS = 10_000;
/** Loads under way at once: each has a connection of the loads' own and indexes in turns of the event loop. */
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
 * first (LoadTurns); then kept current from the grant log (LogReplayer). Which tenants are held when
 * they do not all fit is TenantRegistry's to say, by the policy of src/store/hold-policy.ts.
 *
 * Freshness is the answer cache's: a held tenant answers for at most `maxAgeMs` after its last
 * catch-up began (refreshed ahead, off the request path, under steady traffic), or for as long as
 * the change watch vouches that nothing of it changed since, so a write on another node shows
 * within that; after this node's own write (`invalidate`), the next check waits for a catch-up
 * that begins after it, so read-after-write holds. A tenant with more grants
 * than the node may still hold (`maxGrants` over all tenants, an agent counting as a grant) stays
 * in the database.
 */
export class HeldTenants {
  /** Who is held, and the policy's decisions. */
  private readonly held: TenantRegistry;
  private readonly loading = new Map<string, Promise<boolean>>();
  /** Loads run MAX_LOADS at a time, the most used of the tenants waiting first. */
  private readonly turns = new LoadTurns(MAX_LOADS, (tenantId) => this.held.unheld.usesOf(tenantId));
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
    this.held = new TenantRegistry(options.maxGrants, this.clock, this.halfLifeMs, logger);
    this.loader = new TenantLoader(pool, meter, MAX_LOADS);
    this.replayer = new LogReplayer(
      pool,
      {
        isHeld: (tenantId, tenant) => this.held.get(tenantId) === tenant,
        drop: (tenantId) => this.held.drop(tenantId, 'its catch-up failed, or it is gone'),
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
      this.heldElseUsed(tenantId);
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

  /**
   * Whether the tenant's grants are held; when not, its use is counted as `current` counts it
   * (which may start its load), and the database answers.
   */
  heldElseUsed(tenantId: string): boolean {
    if (this.held.has(tenantId)) return true;
    if (this.held.usedWhileNotHeld(tenantId, this.loading.has(tenantId))) void this.load(tenantId);
    return false;
  }

  /** Whether the tenant's grants are held (current or about to be caught up). */
  holds(tenantId: string): boolean {
    return this.held.has(tenantId);
  }

  /** Grants and agents held in memory over all tenants. */
  get size(): number {
    return this.held.size;
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
            this.held.unheld.refuse(tenantId, RETRY_FAILED_MS);
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

  private get maxReplayedAhead(): number {
    return this.options.maxReplayedAhead ?? MAX_REPLAYED_AHEAD;
  }

  private generation(tenantId: string): number {
    return this.generations.get(tenantId) ?? 0;
  }

  /** Reads the tenant if the policy would hold it (TenantLoader), and holds it if it still would, displacing whom the policy says. */
  private async loadNow(tenantId: string): Promise<void> {
    if (this.closed) return;
    this.forgetUnused();
    const generation = this.generation(tenantId);
    const startedAt = this.clock.now();
    const read = await this.loader.read(tenantId, this.options.maxGrants, this.maxReplayedAhead, (weight) => this.held.admits(tenantId, weight));
    if (read === null || 'notAdmitted' in read) return;
    if ('heldBack' in read) return this.refuseWhileHeldBack(tenantId, read.heldBack);
    if ('tooLarge' in read) {
      this.held.admits(tenantId, this.options.maxGrants + 1);
      return;
    }
    const { index, agents, horizon, replayed } = read;
    const weight = index.footprint + agents.size;
    // Tenants loaded or used meanwhile may have changed the decision.
    if (!this.held.admits(tenantId, weight)) return;
    const now = this.clock.now();
    const displacing = this.held.displacedBy(tenantId, weight)!;
    const uses = this.held.unheld.usesOf(tenantId);
    const unheld = this.held.unheld.take(tenantId)!;
    this.held.hold(
      tenantId,
      {
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
      },
      displacing,
    );
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
    this.held.drop(tenantId, 'reloading');
    this.held.unheld.forgive(tenantId);
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
      return this.held.drop(tenantId, 'held back');
    }
    if (this.held.fits()) return true;
    this.held.drop(tenantId, 'grew past the room');
    const displacing = this.held.displacedBy(tenantId, this.held.weightOf(tenant));
    if (displacing === null) return false;
    this.held.hold(tenantId, tenant, displacing);
    this.logger.info({ tenantId, weight: this.held.weightOf(tenant) }, 'grants in memory: tenant loaded');
    return true;
  }

  /**
   * A writing transaction left open pins the horizon, so every catch-up would read and skip all
   * that committed since: past a bound, the database answers until the horizon moves on.
   */
  private refuseWhileHeldBack(tenantId: string, transactions: number): void {
    this.held.unheld.refuse(tenantId, RETRY_FAILED_MS);
    this.logger.warn({ tenantId, transactions }, 'grants in memory: an open transaction holds the grant log back; answering from the database');
  }

  private fellBack(error: Error, tenantId: string): void {
    this.logger.warn({ err: { message: error.message }, tenantId }, 'grants in memory: falling back to the database');
  }

  /**
   * Before a load: tenants held but not used for IDLE_MS make room (they would need a long
   * catch-up anyway), and tenants neither held nor loading whose uses have all but decayed, and
   * refusals past, are forgotten.
   */
  private forgetUnused(): void {
    this.held.dropIdle(this.clock.now() - IDLE_MS);
    this.held.unheld.forgetUnused((tenantId) => this.loading.has(tenantId));
  }
}
