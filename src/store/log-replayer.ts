import type pg from 'pg';
import { windowOf, type WallClock } from '../engine/grant-window.ts';
import type { Slice, WorkMeter } from '../engine/work-meter.ts';
import { GRANT_LOG_SQL, type LoggedGrant, type LogRow } from './load-sql.ts';
import type { HeldTenant } from './held-tenant.ts';

/** More logged statements, or grants, than this (or than replayBound allows a large tenant) to replay in one catch-up: reload instead. */
const MAX_LOG_ROWS = 10_000;
const MAX_LOG_GRANTS = 100_000;
/** The most logged statements one catch-up reads, whatever the tenant's size. */
const MAX_LOG_ROWS_EVER = 100_000;
/**
 * Grant flips a catch-up replays in one turn of the event loop (one unit of work); a longer backlog
 * is replayed in units of it under the work meter. Measured on 500,000 grants: 5,000 new grants
 * flipped in 8-13 ms, 20,000 in 20-50 (2026-11-24); windowed ones cost more: 1,000 windowed grants
 * on one object in 3-4 ms on a quiet machine (docs/measurements.md, session 32), so a unit is 250,
 * about the millisecond a check's budget allows.
 */
const REPLAY_SLICE = 250;

export interface ReplayOptions {
  /** Logged statements a catch-up replays at least before it reloads instead (MAX_LOG_ROWS). */
  maxLogRows?: number | undefined;
  /** Grants a catch-up replays at least before it reloads instead (MAX_LOG_GRANTS). */
  maxLogGrants?: number | undefined;
  /** Grant flips a catch-up replays in one unit of work (REPLAY_SLICE). */
  replaySlice?: number | undefined;
}

/** What a catch-up asks of the registry that holds the tenant (HeldTenants). */
export interface ReplayHost {
  /** Whether `tenant` is still the copy held for `tenantId` (a drop or a reload forgets it). */
  isHeld(tenantId: string, tenant: HeldTenant): boolean;
  /** Forgets the held copy: the tenant is gone, or a replay failed half-way. */
  drop(tenantId: string): void;
  /** The log can no longer bring the copy up to date: the tenant is loaded afresh (`why` is logged). */
  reload(tenantId: string, why: string): void;
  /** The copy is up to the log: whether it may stay held (else it is dropped). */
  keeps(tenantId: string, tenant: HeldTenant): boolean;
  /** A catch-up failed: the database answers the tenant. */
  fellBack(error: Error, tenantId: string): void;
}

/**
 * Brings held tenants up to the grant log that triggers write in every writing transaction
 * (prisma/functions/grantd_log_change.sql): a catch-up reads what the log holds from the held
 * tenant's horizon on, less the transactions already replayed, usually a few rows (GRANT_LOG_SQL).
 * Grant changes are replayed as flips, which end right in any commit order; the agents a change
 * names are read again by the same statement. A backlog longer than a unit is replayed in units
 * under the work meter (docs/decisions.md#one-meter-for-all-work-in-memory).
 */
export class LogReplayer {
  private readonly maxLogRows: number;
  private readonly maxLogGrants: number;
  private readonly replaySlice: number;

  constructor(
    private readonly pool: pg.Pool,
    private readonly host: ReplayHost,
    /** The process's work in memory (WorkMeter): a long replay is its tenant's work, in slices. */
    private readonly meter: WorkMeter,
    private readonly clock: WallClock,
    { maxLogRows = MAX_LOG_ROWS, maxLogGrants = MAX_LOG_GRANTS, replaySlice = REPLAY_SLICE }: ReplayOptions = {},
  ) {
    this.maxLogRows = maxLogRows;
    this.maxLogGrants = maxLogGrants;
    this.replaySlice = replaySlice;
  }

  /**
   * Brings the held tenant up to the log, one catch-up at a time per tenant; resolves true when it
   * is still held and has seen `generation`. A catch-up already under way that has seen it is shared.
   */
  catchUp(tenantId: string, tenant: HeldTenant, generation: number): Promise<boolean> {
    if (tenant.pending && tenant.pending.generation >= generation) return tenant.pending.done;
    const after = tenant.pending?.done ?? Promise.resolve(true);
    const done = after
      .then(() => this.applyLog(tenantId, tenant, generation))
      .catch((error: Error) => {
        this.host.fellBack(error, tenantId);
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
    if (!this.host.isHeld(tenantId, tenant) || tenant.replaying) return false;
    const startedAt = this.clock.now();
    const bound = this.replayBound(tenant);
    const { rows } = await this.pool.query<LogRow>({
      name: 'grantd_grant_log',
      text: GRANT_LOG_SQL,
      values: [tenantId, tenant.horizon, [...tenant.replayed], bound.rows + 1],
      rowMode: 'array',
    });
    if (!this.host.isHeld(tenantId, tenant)) return false;
    const [first] = rows;
    if (first === undefined) {
      this.host.drop(tenantId); // the tenant is gone
      return false;
    }
    const [, prunedBelow] = first;
    const grants = rows.reduce((sum, row) => sum + (row[3]?.length ?? 0), 0);
    if (BigInt(tenant.horizon) < BigInt(prunedBelow) || rows.length > bound.rows || grants > bound.grants) {
      // Pruned past what this node holds, or more to replay than to reload: the database answers until a reload is held.
      this.host.reload(
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
            if (!this.host.isHeld(tenantId, tenant)) return;
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
        this.host.drop(tenantId);
        this.host.fellBack(error, tenantId);
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
    if (!this.host.keeps(tenantId, tenant)) return false;
    tenant.verifiedAt = startedAt;
    tenant.generation = Math.max(tenant.generation, generation);
    return true;
  }

  /**
   * How much of the log a catch-up replays rather than reload the tenant. It grows with the tenant:
   * replaying as many grants as it holds costs less than reading them all again, and a tenant's
   * first catch-up after a load replays what was written while it loaded, which a fixed bound
   * would have turned into another load, and so on for as long as writes kept up.
   */
  private replayBound(tenant: HeldTenant): { rows: number; grants: number } {
    const held = tenant.index.size + tenant.agents.size;
    return { rows: Math.max(this.maxLogRows, Math.min(Math.ceil(held / 20), MAX_LOG_ROWS_EVER)), grants: Math.max(this.maxLogGrants, held) };
  }
}

const tripleOf = ([subjectNs, subjectId, relation, objectNs, objectId]: LoggedGrant) => ({
  subject: { ns: subjectNs, id: subjectId },
  relation,
  object: { ns: objectNs, id: objectId },
});

const flip = (tenant: HeldTenant, row: LoggedGrant): void => tenant.index.flip(tripleOf(row), windowOf(row[5] ?? null, row[6] ?? null));
