import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { Logger } from 'pino';
import { GrantIndex } from '../engine/grant-index.ts';
import { windowOf } from '../engine/grant-window.ts';
import { inSlices, WorkMeter, type Slice } from '../engine/work-meter.ts';
import { grantsCopySql, readCopiedGrants, type CopiedGrant } from './grant-copy.ts';

/**
 * The tenants this process holds in memory (each a HeldTenant: its grants and agents), so that
 * checks are answered without a round trip (MemoryChecker). A tenant is loaded in the background
 * the first time it is checked (the database answers meanwhile), then kept current from the log
 * that triggers write in every writing transaction (migrations 20261122100000 and 20261122200000):
 * a catch-up reads what the log holds from the held tenant's horizon on, less the transactions
 * already replayed, usually a few rows. Grant changes are replayed; the agents a change names are
 * read again.
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
  /** Connections of the loads under way, ended by `close`. */
  private readonly loadClients = new Set<pg.Client>();
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: {
      maxGrants: number;
      maxAgeMs: number;
      maxReplayedAhead?: number;
      maxLogRows?: number;
      maxLogGrants?: number;
      /** Grant flips a catch-up replays in one unit of work (REPLAY_SLICE). */
      replaySlice?: number;
    },
    private readonly logger: Logger,
    /** The process's work in memory (WorkMeter): a long replay is its tenant's work, in slices. */
    private readonly meter: WorkMeter = new WorkMeter(),
  ) {}

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
    tenant.lastUsed = Date.now();
    if (tenant.replaying) return null;
    return (await this.catchUp(tenantId, tenant, this.generation(tenantId))) ? tenant : null;
  }

  /**
   * The tenant's grants and agents when they are held and current without a catch-up to wait for
   * (a check of them needs no promise); undefined otherwise, when `current` says what to do.
   */
  currentNow(tenantId: string): HeldTenant | undefined {
    const tenant = this.held.get(tenantId);
    if (!tenant || tenant.replaying) return undefined;
    const now = Date.now();
    const generation = this.generation(tenantId);
    if (tenant.generation !== generation || now - tenant.verifiedAt >= this.options.maxAgeMs) return undefined;
    tenant.lastUsed = now;
    if (now - tenant.verifiedAt >= this.options.maxAgeMs / 2) void this.catchUp(tenantId, tenant, generation);
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

  /** What the tenants held weigh against `maxGrants`: their grants, agents, and the names their indexes intern. */
  private get weight(): number {
    let weight = 0;
    for (const tenant of this.held.values()) weight += tenant.index.footprint + tenant.agents.size;
    return weight;
  }

  /** Ends the loads under way and forgets every tenant; checks then go to the database. */
  async close(): Promise<void> {
    this.closed = true;
    this.held.clear();
    await Promise.all([...this.loadClients].map((client) => client.end().catch(() => undefined)));
  }

  private generation(tenantId: string): number {
    return this.generations.get(tenantId) ?? 0;
  }

  /**
   * Brings the held tenant up to the log, one catch-up at a time per tenant; resolves true when it
   * is still held and has seen `generation`. A catch-up already under way that has seen it is shared.
   */
  private catchUp(tenantId: string, tenant: HeldTenant, generation: number): Promise<boolean> {
    if (tenant.pending && tenant.pending.generation >= generation) return tenant.pending.done;
    const after = tenant.pending?.done ?? Promise.resolve(true);
    const done = after
      .then(() => this.applyLog(tenantId, tenant, generation))
      .catch((error: Error) => {
        this.fellBack(error, tenantId);
        return false;
      });
    const pending = { generation, done };
    tenant.pending = pending;
    void done.then(() => {
      if (tenant.pending === pending) tenant.pending = null;
    });
    return done;
  }

  private async applyLog(tenantId: string, tenant: HeldTenant, generation: number): Promise<boolean> {
    if (this.held.get(tenantId) !== tenant || tenant.replaying) return false;
    const startedAt = Date.now();
    const bound = this.replayBound(tenant);
    const { rows } = await this.pool.query<LogRow>({
      name: 'grantd_grant_log',
      text: GRANT_LOG_SQL,
      values: [tenantId, tenant.horizon, [...tenant.replayed], bound.rows + 1],
      rowMode: 'array',
    });
    if (this.held.get(tenantId) !== tenant) return false;
    const [first] = rows;
    if (first === undefined) return this.drop(tenantId); // the tenant is gone
    const [, prunedBelow] = first;
    const grants = rows.reduce((sum, row) => sum + (row[3]?.length ?? 0), 0);
    if (BigInt(tenant.horizon) < BigInt(prunedBelow) || rows.length > bound.rows || grants > bound.grants) {
      // Pruned past what this node holds, or more to replay than to reload: the database answers until a reload is held.
      this.reload(
        tenantId,
        BigInt(tenant.horizon) < BigInt(prunedBelow) ? 'the grant log was pruned past it' : 'more changes to replay than to reload',
      );
      return false;
    }
    if (grants > this.replaySlice) {
      this.replayInSlices(tenantId, tenant, rows, startedAt, generation);
      return false;
    }
    for (const [, , , changed] of rows) for (const grant of changed ?? []) flip(tenant, grant);
    return this.caughtUp(tenantId, tenant, rows, startedAt, generation);
  }

  /**
   * Replays a backlog longer than a unit one unit at a time under the work meter, charged to the
   * tenant, so that other requests go on meanwhile. The held tenant answers nothing until it is
   * whole (the database does).
   */
  private replayInSlices(tenantId: string, tenant: HeldTenant, rows: LogRow[], startedAt: number, generation: number): void {
    tenant.replaying = true;
    const replay = async (slice: Slice) => {
      let flipped = 0;
      for (const [, , , changed] of rows) {
        for (const grant of changed ?? []) {
          if (flipped > 0 && flipped % this.replaySlice === 0) {
            await slice.pause();
            if (this.held.get(tenantId) !== tenant) return;
          }
          flip(tenant, grant);
          flipped++;
        }
      }
      this.caughtUp(tenantId, tenant, rows, startedAt, generation);
    };
    void this.meter
      .run(tenantId, replay)
      .catch((error: Error) => {
        // Half replayed, the held tenant can never answer.
        this.drop(tenantId);
        this.fellBack(error, tenantId);
      })
      .finally(() => (tenant.replaying = false));
  }

  /** The log's grants are replayed: takes its agents and horizon, and says whether the tenant is still held. */
  private caughtUp(tenantId: string, tenant: HeldTenant, rows: LogRow[], startedAt: number, generation: number): boolean {
    // The agents' scopes come from the statement that read the log, so that the grants and the
    // agents held always come from one state of the database (never a killed agent's old grants
    // beside its new registration's scope).
    const scopes = new Map<string, string[] | null>();
    for (const [, , , , agents, current] of rows) for (const id of agents ?? []) scopes.set(id, current?.[id] ?? null);
    for (const [, , xid] of rows) if (xid !== null) tenant.replayed.add(xid);
    for (const [id, scope] of scopes) {
      if (scope) tenant.agents.set(id, scope);
      else tenant.agents.delete(id);
    }
    // Transactions below the new horizon have finished: their changes were visible to this read.
    const horizon = rows[0]![0];
    tenant.horizon = horizon;
    for (const xid of tenant.replayed) if (BigInt(xid) < BigInt(horizon)) tenant.replayed.delete(xid);
    if (this.weight > this.options.maxGrants) return this.drop(tenantId);
    if (tenant.replayed.size > this.maxReplayedAhead) {
      this.refuseWhileHeldBack(tenantId, tenant.replayed.size);
      return this.drop(tenantId);
    }
    tenant.verifiedAt = startedAt;
    tenant.generation = Math.max(tenant.generation, generation);
    return true;
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
            this.refusedUntil.set(tenantId, Date.now() + RETRY_FAILED_MS);
            if (!this.closed) this.fellBack(error, tenantId);
            return false;
          },
        )
        .finally(() => this.loading.delete(tenantId));
      this.loading.set(tenantId, loading);
    }
    return loading;
  }

  /**
   * How much of the log a catch-up replays rather than reload the tenant. It grows with the tenant:
   * replaying as many grants as it holds costs less than reading them all again, and a tenant's
   * first catch-up after a load replays what was written while it loaded, which a fixed bound
   * would have turned into another load, and so on for as long as writes kept up.
   */
  private replayBound(tenant: HeldTenant): { rows: number; grants: number } {
    const held = tenant.index.size + tenant.agents.size;
    const rows = this.options.maxLogRows ?? MAX_LOG_ROWS;
    const grants = this.options.maxLogGrants ?? MAX_LOG_GRANTS;
    return { rows: Math.max(rows, Math.min(Math.ceil(held / 20), MAX_LOG_ROWS_EVER)), grants: Math.max(grants, held) };
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

  /** Starts a load in the background unless one is under way or the tenant was refused lately. */
  private startLoad(tenantId: string): void {
    if (this.options.maxGrants > 0 && (this.refusedUntil.get(tenantId) ?? 0) <= Date.now()) void this.load(tenantId);
  }

  /** Reads the tenant's grants and agents and the log's horizon from one snapshot, the grants streamed (COPY), giving up past the room left. */
  private async loadNow(tenantId: string): Promise<void> {
    this.dropIdle();
    const generation = this.generation(tenantId);
    const startedAt = Date.now();
    const index = new GrantIndex();
    const room = this.options.maxGrants - this.weight;
    // A connection of its own: a large tenant takes seconds to read, which the pool's requests should not wait for.
    // The copy is one statement, as long as the indexing it waits for: the pool's limits (10 s in the database, 15 s here) would end a large load on a busy machine, again at every retry.
    const client = new pg.Client({
      ...this.pool.options,
      application_name: LOAD_APPLICATION_NAME,
      statement_timeout: LOAD_TIME_LIMIT_MS,
      query_timeout: LOAD_TIME_LIMIT_MS,
    });
    // A lost connection also emits 'error', which would end the process unheard; the load's next query fails with it.
    client.on('error', () => undefined);
    this.loadClients.add(client);
    let horizon: string | undefined;
    let replayed: string[] = [];
    let agents = new Map<string, string[]>();
    try {
      await client.connect();
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const { rows } = await client.query<[string]>({ text: HORIZON_SQL, values: [tenantId], rowMode: 'array' });
      horizon = rows[0]?.[0];
      if (horizon !== undefined) {
        // Transactions at or above the horizon that this snapshot sees are in what it reads.
        const seen = await client.query<[string]>({ text: SEEN_SQL, values: [tenantId, horizon], rowMode: 'array' });
        replayed = seen.rows.map(([xid]) => xid);
        if (replayed.length > this.maxReplayedAhead) {
          await client.query('ROLLBACK');
          this.refuseWhileHeldBack(tenantId, replayed.length);
          return;
        }
        const agentRows = await client.query<[string, string[]]>({ text: TENANT_AGENTS_SQL, values: [tenantId], rowMode: 'array' });
        agents = new Map(agentRows.rows);
        // The stream's chunks are indexed as the tenant's work, under the meter: requests go on between slices.
        const copied = client.query(copyTo(grantsCopySql(client.escapeLiteral(tenantId))));
        const take: CopiedGrant = (subjectNs, subjectId, relation, objectNs, objectId, notBefore, expiresAt) => {
          index.add({ subject: { ns: subjectNs, id: subjectId }, relation, object: { ns: objectNs, id: objectId } }, windowOf(notBefore, expiresAt));
          return index.footprint + agents.size <= room;
        };
        await this.meter.run(tenantId, (slice) => readCopiedGrants(copied, take, slice));
      }
      // Past the room left, the copy was left unread: ending the connection ends it, and the weight check below refuses the tenant.
      if (index.footprint + agents.size <= room) await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      this.loadClients.delete(client);
      await client.end().catch(() => undefined);
    }
    if (horizon === undefined || this.closed) return;
    // The index is this load's alone until it is held: compacted in slices of the tenant's work, then held whole.
    await this.meter.run(tenantId, (slice) => inSlices(index.compacting(), slice));
    if (this.closed) return;
    if (this.weight + index.footprint + agents.size > this.options.maxGrants) {
      this.refusedUntil.set(tenantId, Date.now() + RETRY_TOO_LARGE_MS);
      return;
    }
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
    this.logger.info({ tenantId, grants: index.size, agents: agents.size, ms: Date.now() - startedAt }, 'grants in memory: tenant loaded');
  }

  private get maxReplayedAhead(): number {
    return this.options.maxReplayedAhead ?? MAX_REPLAYED_AHEAD;
  }

  private get replaySlice(): number {
    return this.options.replaySlice ?? REPLAY_SLICE;
  }

  /**
   * A writing transaction left open pins the horizon, so every catch-up would read and skip all
   * that committed since: past a bound, the database answers until the horizon moves on.
   */
  private refuseWhileHeldBack(tenantId: string, transactions: number): void {
    this.refusedUntil.set(tenantId, Date.now() + RETRY_FAILED_MS);
    this.logger.warn({ tenantId, transactions }, 'grants in memory: an open transaction holds the grant log back; answering from the database');
  }

  private fellBack(error: Error, tenantId: string): void {
    this.logger.warn({ err: { message: error.message }, tenantId }, 'grants in memory: falling back to the database');
  }

  private drop(tenantId: string): false {
    const tenant = this.held.get(tenantId);
    if (tenant) this.held.delete(tenantId);
    return false;
  }

  /** Tenants not used for IDLE_MS make room (and would need a long catch-up anyway). */
  private dropIdle(): void {
    const idleSince = Date.now() - IDLE_MS;
    for (const [tenantId, tenant] of this.held) {
      if (tenant.lastUsed < idleSince) this.drop(tenantId);
    }
  }
}

/**
 * A tenant held in memory: its grants indexed and its agents' scope masks, which a check reads, and
 * how far they have followed the grant log.
 */
export interface HeldTenant {
  readonly index: GrantIndex;
  /** Scope masks of the tenant's agents, by external id. */
  readonly agents: Map<string, string[]>;
  /** The oldest transaction running when the index last read the log (bigint as text): all below had finished. */
  horizon: string;
  /** Transactions at or above the horizon whose changes the index holds. */
  replayed: Set<string>;
  /** When the last catch-up (or the load) that succeeded began. */
  verifiedAt: number;
  /** The tenant's generation on this node when that catch-up began. */
  generation: number;
  lastUsed: number;
  pending: { generation: number; done: Promise<boolean> } | null;
  /** A backlog is being replayed in slices: the held tenant is not whole. */
  replaying: boolean;
}

const tripleOf = ([subjectNs, subjectId, relation, objectNs, objectId]: LoggedGrant) => ({
  subject: { ns: subjectNs, id: subjectId },
  relation,
  object: { ns: objectNs, id: objectId },
});

const flip = (tenant: HeldTenant, row: LoggedGrant): void => tenant.index.flip(tripleOf(row), windowOf(row[5] ?? null, row[6] ?? null));

/**
 * The horizon now and the tenant's log_pruned_below on every row (no row: the tenant is gone), then
 * one row per logged statement not yet replayed (xid null when there is none), with the grants it
 * flipped or the agents it changed, and those agents' scopes now (absent: the agent is gone).
 */
type LogRow = [
  horizon: string,
  prunedBelow: string,
  xid: string | null,
  grants: LoggedGrant[] | null,
  agents: string[] | null,
  scopes: Record<string, string[]> | null,
];
/** A grant as the log (grant_changes) records it, and its window's bounds in epoch ms (null or absent: open) when it has one (migration 20261124040000). */
type LoggedGrant = [
  subjectNs: string,
  subjectId: string,
  relation: string,
  objectNs: string,
  objectId: string,
  notBefore?: number | null,
  expiresAt?: number | null,
];

/** The log of tenant $1 from horizon $2 on, but the transactions in $3, at most $4 rows; see LogRow. */
const GRANT_LOG_SQL = `
SELECT grantd_xid_horizon()::text, t.log_pruned_below::text, c.xid::text, c.grants, c.agents,
  (SELECT jsonb_object_agg(a.external_id, a.scope) FROM agents a
   WHERE a.tenant_id = t.id AND a.external_id = ANY(c.agents) AND a.scope IS NOT NULL)
FROM tenants t
LEFT JOIN grant_changes c ON c.tenant_id = t.id AND c.xid >= $2::bigint AND NOT (c.xid = ANY($3::bigint[]))
WHERE t.id = $1::uuid
ORDER BY c.xid, c.id
LIMIT $4`;
/** The horizon of the load's snapshot (no row: the tenant is gone). */
const HORIZON_SQL = 'SELECT grantd_xid_horizon()::text FROM tenants WHERE id = $1::uuid';
/** The transactions at or above horizon $2 whose changes the load's snapshot sees. */
const SEEN_SQL = 'SELECT DISTINCT xid::text FROM grant_changes WHERE tenant_id = $1::uuid AND xid >= $2::bigint';
const TENANT_AGENTS_SQL = 'SELECT external_id, scope FROM agents WHERE tenant_id = $1::uuid AND scope IS NOT NULL';
/** How long a load's statements may take, the copy of all the tenant's grants among them. */
const LOAD_TIME_LIMIT_MS = 5 * 60_000;
/** How a load's own connection shows in pg_stat_activity. */
export const LOAD_APPLICATION_NAME = 'grantd grant load';

/** More logged statements, or grants, than this (or than replayBound allows a large tenant) to replay in one catch-up: reload instead. */
const MAX_LOG_ROWS = 10_000;
const MAX_LOG_GRANTS = 100_000;
/** The most logged statements one catch-up reads, whatever the tenant's size. */
const MAX_LOG_ROWS_EVER = 100_000;
const IDLE_MS = 10 * 60_000;
const RETRY_FAILED_MS = 10_000;
/**
 * Grant flips a catch-up replays in one turn of the event loop (one unit of work); a longer backlog
 * is replayed in units of it under the work meter. Measured on 500,000 grants: 5,000 new grants
 * flipped in 8-13 ms, 20,000 in 20-50 (2026-11-24); windowed ones cost more, so a unit is 1,000.
 */
const REPLAY_SLICE = 1_000;
/** Transactions above the horizon a node replays at most, beside an older one still open. */
const MAX_REPLAYED_AHEAD = 10_000;
const RETRY_TOO_LARGE_MS = 10 * 60_000;
