import type pg from 'pg';
import type { Logger } from 'pino';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import { WorkMeter } from '../engine/work-meter.ts';
import type { HeldTenant } from './held-tenant.ts';
import { LogReplayer, type ReplayOptions } from './log-replayer.ts';
import { TenantLoader } from './tenant-loader.ts';

export type { HeldTenant } from './held-tenant.ts';

const IDLE_MS = 10 * 60_000;
const RETRY_FAILED_MS = 10_000;
const RETRY_TOO_LARGE_MS = 10 * 60_000;
/** Transactions above the horizon a node replays at most, beside an older one still open. */
const MAX_REPLAYED_AHEAD = 10_000;

export interface HeldTenantsOptions extends ReplayOptions {
  /** Grants and agents held over all tenants (the names the indexes intern counting too); 0: none. */
  maxGrants: number;
  /** How long after its last catch-up began a held tenant may answer. */
  maxAgeMs: number;
  maxReplayedAhead?: number;
  /** The clock of loads, catch-ups, refusals and idleness: epoch ms (Date's by default; tests move one). */
  clock?: WallClock;
}

/**
 * The tenants this process holds in memory (each a HeldTenant: its grants and agents), so that
 * checks are answered without a round trip (MemoryChecker). A tenant is loaded in the background
 * the first time it is checked, while the database answers (TenantLoader), then kept current from
 * the grant log (LogReplayer).
 *
 * Freshness is the answer cache's: a held tenant answers for at most `maxAgeMs` after its last
 * catch-up began (refreshed ahead, off the request path, under steady traffic), so a write on
 * another node shows within that; after this node's own write (`invalidate`), the next check
 * waits for a catch-up that begins after it, so read-after-write holds. A tenant with more grants
 * than the node may still hold (`maxGrants` over all tenants, an agent counting as a grant) stays
 * in the database.
 */
export class HeldTenants {
  private readonly held = new Map<string, HeldTenant>();
  private readonly loading = new Map<string, Promise<boolean>>();
  /** Tenants not to load again before the time given: too large, or their load failed. */
  private readonly refusedUntil = new Map<string, number>();
  /** Bumped by this node's writes; a held tenant is current only once it has caught up with its tenant's generation. */
  private readonly generations = new Map<string, number>();
  private readonly clock: WallClock;
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
    this.loader = new TenantLoader(pool, meter);
    this.replayer = new LogReplayer(
      pool,
      {
        isHeld: (tenantId, tenant) => this.held.get(tenantId) === tenant,
        drop: (tenantId) => this.drop(tenantId),
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
      this.startLoad(tenantId);
      return null;
    }
    const ready = this.currentNow(tenantId);
    if (ready) return ready;
    tenant.lastUsed = this.clock.now();
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
    if (tenant.generation !== generation || now - tenant.verifiedAt >= this.options.maxAgeMs) return undefined;
    tenant.lastUsed = now;
    if (now - tenant.verifiedAt >= this.options.maxAgeMs / 2) void this.replayer.catchUp(tenantId, tenant, generation);
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
      loading = this.loadNow(tenantId)
        .then(
          () => this.held.has(tenantId),
          (error: Error) => {
            this.refusedUntil.set(tenantId, this.clock.now() + RETRY_FAILED_MS);
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
    await this.loader.close();
  }

  /** What the tenants held weigh against `maxGrants`: their grants, agents, and the names their indexes intern. */
  private get weight(): number {
    let weight = 0;
    for (const tenant of this.held.values()) weight += tenant.index.footprint + tenant.agents.size;
    return weight;
  }

  private get maxReplayedAhead(): number {
    return this.options.maxReplayedAhead ?? MAX_REPLAYED_AHEAD;
  }

  private generation(tenantId: string): number {
    return this.generations.get(tenantId) ?? 0;
  }

  /** Starts a load in the background unless one is under way or the tenant was refused lately. */
  private startLoad(tenantId: string): void {
    if (this.options.maxGrants > 0 && (this.refusedUntil.get(tenantId) ?? 0) <= this.clock.now()) void this.load(tenantId);
  }

  /** Reads the tenant in the room left (TenantLoader), and holds it if it still fits. */
  private async loadNow(tenantId: string): Promise<void> {
    this.dropIdle();
    const generation = this.generation(tenantId);
    const startedAt = this.clock.now();
    const read = await this.loader.read(tenantId, this.options.maxGrants - this.weight, this.maxReplayedAhead);
    if (read === null) return;
    if ('heldBack' in read) return this.refuseWhileHeldBack(tenantId, read.heldBack);
    // Tenants loaded meanwhile may have taken the room.
    if ('tooLarge' in read || this.weight + read.index.footprint + read.agents.size > this.options.maxGrants) {
      this.refusedUntil.set(tenantId, this.clock.now() + RETRY_TOO_LARGE_MS);
      return;
    }
    const { index, agents, horizon, replayed } = read;
    this.held.set(tenantId, {
      index,
      agents,
      horizon,
      replayed: new Set(replayed),
      verifiedAt: startedAt,
      generation,
      lastUsed: startedAt,
      pending: null,
      replaying: false,
    });
    this.logger.info({ tenantId, grants: index.size, agents: agents.size, ms: this.clock.now() - startedAt }, 'grants in memory: tenant loaded');
  }

  /**
   * The held copy can no longer be brought up to date: drop it and load the tenant afresh in the
   * background, whatever refusal an earlier load left (the tenant fitted and was held until now).
   */
  private reload(tenantId: string, why: string): void {
    this.drop(tenantId);
    this.refusedUntil.delete(tenantId);
    this.logger.info({ tenantId, why }, 'grants in memory: reloading the tenant; the database answers meanwhile');
    if (this.options.maxGrants > 0) void this.load(tenantId);
  }

  /** A catch-up brought the copy up to the log: it stays held if the tenants held still fit and it is not held back. */
  private keeps(tenantId: string, tenant: HeldTenant): boolean {
    if (this.weight > this.options.maxGrants) return this.drop(tenantId);
    if (tenant.replayed.size > this.maxReplayedAhead) {
      this.refuseWhileHeldBack(tenantId, tenant.replayed.size);
      return this.drop(tenantId);
    }
    return true;
  }

  /**
   * A writing transaction left open pins the horizon, so every catch-up would read and skip all
   * that committed since: past a bound, the database answers until the horizon moves on.
   */
  private refuseWhileHeldBack(tenantId: string, transactions: number): void {
    this.refusedUntil.set(tenantId, this.clock.now() + RETRY_FAILED_MS);
    this.logger.warn({ tenantId, transactions }, 'grants in memory: an open transaction holds the grant log back; answering from the database');
  }

  private fellBack(error: Error, tenantId: string): void {
    this.logger.warn({ err: { message: error.message }, tenantId }, 'grants in memory: falling back to the database');
  }

  private drop(tenantId: string): false {
    this.held.delete(tenantId);
    return false;
  }

  /** Tenants not used for IDLE_MS make room (and would need a long catch-up anyway). */
  private dropIdle(): void {
    const idleSince = this.clock.now() - IDLE_MS;
    for (const [tenantId, tenant] of this.held) {
      if (tenant.lastUsed < idleSince) this.drop(tenantId);
    }
  }
}
