import type { Logger } from 'pino';
import type pg from 'pg';
import { parseSnapshot, type Snapshot } from './revisions.ts';

/**
 * The tenants changed since the last poll: the changes logged (the feed, src/store/revisions.ts) or
 * the tenants deleted (migration 20261202000000) by transactions that had not finished in the last
 * poll's snapshot ($1 its xmax, $2 the ones it saw running), and this statement's own snapshot. One
 * statement, so the rows are the snapshot's: a transaction finished in it is read now or was read by
 * an earlier poll, never skipped, whatever order transactions commit in.
 */
const POLL_SQL = `SELECT pg_current_snapshot()::text,
  ARRAY(SELECT DISTINCT tenant_id::text FROM changes WHERE xid >= $1::bigint OR xid = ANY($2::bigint[])),
  ARRAY(SELECT DISTINCT tenant_id::text FROM deleted_tenants WHERE xid >= $1::bigint OR xid = ANY($2::bigint[]))`;

/** Tenants remembered as changed, at most; past it, everything loaded so far goes back to the age rule. */
const MAX_CHANGED_TENANTS = 100_000;

/** What a cache asks the change watch: whether nothing of the tenant changed since `loadedAt` (Date's clock). */
export interface TenantWatch {
  covers(tenantId: string, loadedAt: number): boolean;
}

export interface ChangeWatchOptions {
  /** How long what the caches hold is used by age alone (FRESHNESS_MS); the watch must have read the database that lately to vouch longer. */
  maxAgeMs: number;
  /** Time between polls. */
  intervalMs: number;
}

/**
 * One statement a process every `intervalMs` over the changes every tenant logs in its writing
 * statements (docs/decisions.md#a-change-watch-keeps-unchanged-tenants-cached): what a tenant's
 * last lookup found (its keys, its schema, its grants held) stays usable past `maxAgeMs` while the
 * watch has read the database within `maxAgeMs` and seen nothing of that tenant change since the
 * lookup began (`covers`). Anything it cannot vouch for falls back to the age rule: entries loaded
 * before its first poll, a tenant it saw change, and everything while its polls fail or lag.
 */
export class ChangeWatch implements TenantWatch {
  /** When the last poll whose answer was applied was sent: every change committed before it is in `changedAt`. */
  private readAt = -Infinity;
  /**
   * Entries loaded up to this instant are not vouched for: before the first poll's answer was
   * applied they may miss changes no poll read; before a reset, `changedAt` no longer says.
   */
  private since = Infinity;
  /** The latest instant a poll was applied at (a later poll applied before it saw the clock set back), and when by the monotonic clock. */
  private latest = { at: -Infinity, monotonic: 0 };
  /** For each tenant seen changed, when the poll that saw it was applied. */
  private readonly changedAt = new Map<string, number>();
  private last: Snapshot | null = null;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | null = null;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: ChangeWatchOptions,
    private readonly logger?: Logger,
  ) {}

  /**
   * Whether an entry of the tenant whose load began at `loadedAt` (Date's clock) may still be used
   * whatever its age: nothing of the tenant committed since then, as of a read less than `maxAgeMs` ago.
   */
  covers(tenantId: string, loadedAt: number): boolean {
    const sinceRead = Date.now() - this.readAt;
    return loadedAt > this.since && sinceRead >= 0 && sinceRead < this.options.maxAgeMs && !((this.changedAt.get(tenantId) ?? -Infinity) >= loadedAt);
  }

  /** Polls every `intervalMs` until `stop`; a failed poll is logged and the next one reads from where the last good one left off. */
  start(): void {
    const tick = () => {
      this.polling = this.poll()
        .catch((error: unknown) => this.logger?.warn({ err: { message: (error as Error).message } }, 'change watch poll failed'))
        .finally(() => {
          this.polling = null;
          if (this.timer !== undefined) this.timer = setTimeout(tick, this.options.intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.polling;
  }

  /** One poll: reads the tenants changed since the last applied poll and records them. */
  async poll(): Promise<void> {
    const sentAt = Date.now();
    const previous = this.last;
    const { rows } = await this.pool.query<[string, string[], string[]]>({
      name: 'grantd_change_watch',
      text: POLL_SQL,
      // Before the first poll, no change is read: entries loaded before it are not covered.
      values: previous ? [previous.xmax.toString(), [...previous.running].map(String)] : [(2n ** 63n - 1n).toString(), []],
      rowMode: 'array',
    });
    const [snapshot, changed, deleted] = rows[0]!;
    const appliedAt = Date.now();
    // Too many to remember, or the clock set back (instants no longer order loads and changes):
    // vouch only for what is loaded past every instant the clock may have given before (it runs no
    // faster than the monotonic clock between two polls).
    const monotonic = performance.now();
    if (this.changedAt.size + changed.length + deleted.length > MAX_CHANGED_TENANTS || appliedAt < this.latest.at) {
      this.changedAt.clear();
      this.since = Math.max(appliedAt, this.latest.at + (monotonic - this.latest.monotonic));
    }
    if (appliedAt >= this.latest.at) this.latest = { at: appliedAt, monotonic };
    for (const tenantId of [...changed, ...deleted]) this.changedAt.set(tenantId, appliedAt);
    this.last = parseSnapshot(snapshot);
    this.readAt = sentAt;
    if (!previous) this.since = appliedAt;
  }
}
