import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { DEFAULT_CONFIG } from '../config.ts';
import type { CheckTimeShares } from '../engine/check-time.ts';
import { RetryLater } from '../errors.ts';
import { READ_ONLY_SNAPSHOT_SQL } from './graph-sql.ts';

/** How long a check or listing statement may run: well under what a request may take. */
export const GRAPH_STATEMENT_TIMEOUT_MS = 2_000;
/** How long a tenant's statement waits for its share before it is refused: as long as one waits for the pool. */
const QUEUE_MS = 2_000;

/**
 * The pool of graph statements, apart from Prisma's: however many checks and listings run, key
 * lookups, writes and catch-ups of the grants in memory still find a connection. Its connections
 * are read-only and carry the statements' time limit from the start, so a statement is one round
 * trip (no transaction around it to set them).
 */
export function openGraphPool(url: string, size: number, onError: (error: Error) => void, statementTimeoutMs = GRAPH_STATEMENT_TIMEOUT_MS): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: size,
    connectionTimeoutMillis: QUEUE_MS,
    idleTimeoutMillis: 30_000,
    statement_timeout: statementTimeoutMs,
    // The client gives up a little after the server should have: a lost connection, not a slow statement.
    query_timeout: statementTimeoutMs + 5_000,
    options: '-c default_transaction_read_only=on',
    keepAlive: true,
  });
  // An idle client losing its connection emits here; without a listener it would crash the process.
  pool.on('error', onError);
  return pool;
}

export interface GraphStatementOptions {
  /** Percent of the pool's connections one tenant's statements may hold at once (at least one). */
  tenantPoolShare?: number;
  queueMs?: number;
  /** The process's time on checks shared between tenants: a statement's time counts as its tenant's. */
  checkTime?: CheckTimeShares;
}

/**
 * Runs the statements that answer checks and listings on their pool (openGraphPool), so that no
 * tenant can stall the others: at most a share of the pool's connections run one tenant's
 * statements at once; the tenant's others wait their turn, in order, for a bounded time. A
 * statement's time also counts against its tenant's share of the time on checks (CheckTimeShares):
 * a tenant past it while others' checks are asked for waits before its next statement, so that
 * its costly statements do not take the database from the others.
 */
export class GraphStatements {
  readonly perTenant: number;
  /** The pool's time limit on a statement, which a cancelled check names. */
  readonly statementTimeoutMs: number;
  private readonly queueMs: number;
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  /** Per tenant, those waiting for it to have a statement free without taking it (whenFree). */
  private readonly freeWaiters = new Map<string, (() => void)[]>();
  private readonly checkTime: CheckTimeShares | undefined;

  constructor(
    private readonly pool: pg.Pool,
    { tenantPoolShare = DEFAULT_CONFIG.GRANTD_TENANT_POOL_SHARE, queueMs = QUEUE_MS, checkTime }: GraphStatementOptions = {},
  ) {
    this.checkTime = checkTime;
    this.perTenant = Math.max(1, Math.floor(((pool.options.max ?? 10) * tenantPoolShare) / 100));
    this.statementTimeoutMs = Number(pool.options.statement_timeout ?? 0);
    this.queueMs = queueMs;
  }

  async query<R extends pg.QueryResultRow>(tenantId: string, config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    return this.inTurn(tenantId, () => this.run<R>(config));
  }

  /**
   * Runs `read`'s statements on one connection, in one read-only REPEATABLE READ transaction, so
   * that all of them see one state of the database; counted as one statement of the tenant.
   */
  async inSnapshot<T>(
    tenantId: string,
    read: (query: <R extends pg.QueryResultRow>(config: pg.QueryConfig) => Promise<R[]>) => Promise<T>,
  ): Promise<T> {
    return this.inTurn(tenantId, async () => {
      const client = await this.pool.connect();
      try {
        await client.query(READ_ONLY_SNAPSHOT_SQL);
        const result = await read(async <R extends pg.QueryResultRow>(config: pg.QueryConfig) => (await client.query<R>(config)).rows);
        await client.query('COMMIT');
        client.release();
        return result;
      } catch (error) {
        // The transaction may still be open: the connection is ended rather than handed on.
        client.release(error as Error);
        throw error;
      }
    });
  }

  /**
   * Resolves once the tenant could start one more statement, without taking it, or after `queueMs`
   * (its statement then waits its turn as any). A batch of checks waits here still open
   * (TenantBatches), so that the checks asked while the tenant's share of the pool is busy go to the
   * database in one statement once a connection of its share is free, not each turn's in a statement
   * of its own: what one check costs the database falls with the batch (docs/decisions.md#a-batch-of-checks-waits-open-for-its-tenants-share-of-the-pool).
   */
  whenFree(tenantId: string): Promise<void> {
    if ((this.running.get(tenantId) ?? 0) < this.perTenant) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.freeWaiters.get(tenantId) ?? [];
      this.freeWaiters.set(tenantId, waiters);
      const free = () => {
        clearTimeout(timer);
        const at = waiters.indexOf(free);
        if (at >= 0) waiters.splice(at, 1);
        if (waiters.length === 0 && this.freeWaiters.get(tenantId) === waiters) this.freeWaiters.delete(tenantId);
        resolve();
      };
      const timer = setTimeout(free, this.queueMs);
      waiters.push(free);
    });
  }

  /** Runs `statement` once the tenant has its turn, its time counted against the tenant's share. */
  private async inTurn<T>(tenantId: string, statement: () => Promise<T>): Promise<T> {
    const turns = this.checkTime?.of(tenantId);
    const wait = turns?.wait() ?? 0;
    if (wait > 0) await sleep(wait);
    await this.turn(tenantId);
    const started = performance.now();
    try {
      return await statement();
    } finally {
      turns?.spent(performance.now() - started);
      this.done(tenantId);
    }
  }

  private async run<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    const client = await this.pool.connect();
    try {
      const result = await client.query<R>(config);
      client.release();
      return result;
    } catch (error) {
      // A statement PostgreSQL refused or cancelled leaves its connection fit for the next (pool.query would drop it); any other failure ends it.
      client.release(error instanceof pg.DatabaseError ? undefined : (error as Error));
      throw error;
    }
  }

  /** Resolves once the tenant may run one more statement; refuses after `queueMs`. */
  private turn(tenantId: string): Promise<void> {
    const running = this.running.get(tenantId) ?? 0;
    if (running < this.perTenant) {
      this.running.set(tenantId, running + 1);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(tenantId) ?? [];
      this.waiting.set(tenantId, queue);
      const start = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        queue.splice(queue.indexOf(start), 1);
        if (queue.length === 0) this.waiting.delete(tenantId);
        reject(
          new RetryLater(
            "too many of this tenant's checks and listings are running at once; retry shortly",
            `tenant over its share of the pool (${this.perTenant} statements) for ${this.queueMs} ms`,
          ),
        );
      }, this.queueMs);
      queue.push(start);
    });
  }

  /** A statement ended: the tenant's next waiting one takes its place. */
  private done(tenantId: string): void {
    const queue = this.waiting.get(tenantId);
    const next = queue?.shift();
    if (next) {
      if (queue!.length === 0) this.waiting.delete(tenantId);
      next();
      return;
    }
    const running = this.running.get(tenantId)! - 1;
    if (running === 0) this.running.delete(tenantId);
    else this.running.set(tenantId, running);
    for (const free of [...(this.freeWaiters.get(tenantId) ?? [])]) free();
  }
}
