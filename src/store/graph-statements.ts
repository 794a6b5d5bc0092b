import type pg from 'pg';
import { RetryLater } from '../errors.ts';

/** How long a check, listing or agent statement may run: well under what a request may take. */
export const GRAPH_STATEMENT_TIMEOUT_MS = 2_000;
/** Share of the pool one tenant's graph statements may hold at once, in percent (GRANTD_TENANT_POOL_SHARE). */
export const DEFAULT_TENANT_POOL_SHARE = 50;
/** How long a tenant's statement waits for its share before it is refused: as long as one waits for the pool. */
const QUEUE_MS = 2_000;

export interface GraphStatementOptions {
  /** Percent of the pool's connections one tenant's statements may hold at once (at least one). */
  tenantPoolShare?: number;
  statementTimeoutMs?: number;
  queueMs?: number;
}

/**
 * Runs the statements that answer checks and listings on the shared pool, so that no tenant can
 * stall the others: each statement runs in a read-only transaction under its own time limit, and
 * at most a share of the pool's connections run one tenant's statements at once; the tenant's
 * others wait their turn, in order, for a bounded time.
 */
export class GraphStatements {
  readonly perTenant: number;
  readonly statementTimeoutMs: number;
  private readonly queueMs: number;
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();
  private readonly begin: string;

  constructor(
    private readonly pool: pg.Pool,
    { tenantPoolShare = DEFAULT_TENANT_POOL_SHARE, statementTimeoutMs = GRAPH_STATEMENT_TIMEOUT_MS, queueMs = QUEUE_MS }: GraphStatementOptions = {},
  ) {
    this.perTenant = Math.max(1, Math.floor(((pool.options.max ?? 10) * tenantPoolShare) / 100));
    this.statementTimeoutMs = statementTimeoutMs;
    this.queueMs = queueMs;
    // SET LOCAL: the limit ends with the transaction, and the connection goes back to the pool as it came.
    this.begin = `BEGIN READ ONLY; SET LOCAL statement_timeout = ${Math.floor(statementTimeoutMs)}`;
  }

  async query<R extends pg.QueryResultRow>(tenantId: string, config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    await this.turn(tenantId);
    try {
      return await this.timed<R>(config);
    } finally {
      this.done(tenantId);
    }
  }

  /** Statements of the tenant running, and waiting, now. */
  load(tenantId: string): { running: number; waiting: number } {
    return { running: this.running.get(tenantId) ?? 0, waiting: this.waiting.get(tenantId)?.length ?? 0 };
  }

  private async timed<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    const client = await this.pool.connect();
    let failed: Error | undefined;
    try {
      await client.query(this.begin);
      return await client.query<R>(config);
    } catch (error) {
      failed = error as Error;
      throw error;
    } finally {
      // COMMIT ends a transaction that failed too; a connection that cannot end it is not reused.
      await client.query('COMMIT').then(
        () => client.release(),
        (error: Error) => client.release(failed ?? error),
      );
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
  }
}

/** Whether PostgreSQL cancelled the statement: its time limit, or an operator's pg_cancel_backend. */
export function isCancelled(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === CANCELLED;
}
export const CANCELLED = '57014';
