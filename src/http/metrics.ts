import type { Server } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type pg from 'pg';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { HeldTenants } from '../store/held-tenants.ts';

/** The Prometheus metrics of one grantd process (its own registry, so that tests can build many apps). */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'grantd_http_requests_total',
    help: 'HTTP requests answered, by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'grantd_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by route, method and status',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  private readonly droppedConnections = new Counter({
    name: 'grantd_http_connections_dropped_total',
    help: 'Connections closed as soon as accepted, the process holding GRANTD_MAX_CONNECTIONS already',
    registers: [this.registry],
  });
  private readonly decisions = new Counter({
    name: 'grantd_check_decisions_total',
    help: 'Check answers (single and bulk items), by outcome',
    labelNames: ['allowed'],
    registers: [this.registry],
  });

  /**
   * `pools`: Prisma's, and the graph statements' own. `ofCluster`: in a cluster worker, the
   * exposition of every worker, which the primary aggregates.
   */
  constructor(
    pools: { db: pg.Pool; graph: pg.Pool },
    heldTenants: HeldTenants,
    private readonly ofCluster?: () => Promise<string>,
  ) {
    collectDefaultMetrics({ register: this.registry, prefix: 'grantd_' });
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read());
        },
      });
    const poolGauges = (prefix: string, of: string, pool: pg.Pool) => {
      gauge(`${prefix}_connections`, `Database connections open${of}`, () => pool.totalCount);
      gauge(`${prefix}_idle`, `Database connections idle${of}`, () => pool.idleCount);
      gauge(`${prefix}_waiting`, `Queries waiting for a database connection${of}`, () => pool.waitingCount);
    };
    poolGauges('grantd_db_pool', '', pools.db);
    poolGauges('grantd_graph_pool', ' in the pool of checks and listings', pools.graph);
    gauge(
      'grantd_graph_memory_grants',
      'Grants and agents held in memory to answer checks; they and the names they use (4 grants a name) count against GRANTD_GRAPH_MEMORY',
      () => heldTenants.size,
    );
  }

  /** The counter and histogram of each (route, method, status), resolved once: prom-client hashes labels on every lookup. */
  private readonly series = new Map<string, { requests: Counter.Internal; latency: Histogram.Internal<string> }>();

  /** Counts and times every request, labelled by the contract route (not the raw path). */
  observe = (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      // Never the raw path: a label per path a client makes up would grow the registry without bound.
      const route =
        (req as Request & { tsRestRoute?: { path: string } }).tsRestRoute?.path ??
        (req.route as { path?: string } | undefined)?.path ??
        (res.statusCode === 404 ? 'unmatched' : 'other');
      const key = `${route} ${req.method} ${res.statusCode}`;
      let series = this.series.get(key);
      if (!series) {
        const labels = { route, method: req.method, status: String(res.statusCode) };
        series = { requests: this.requests.labels(labels), latency: this.latency.labels(labels) };
        this.series.set(key, series);
      }
      series.requests.inc();
      series.latency.observe(Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };

  /** Counts the connections the server drops past its cap. */
  countDrops(server: Server): void {
    server.on('drop', () => this.droppedConnections.inc());
  }

  /** What GET /metrics shows: this process's metrics, or its cluster's. */
  exposition(): Promise<string> {
    return this.ofCluster ? this.ofCluster() : this.registry.metrics();
  }

  countDecisions(allowed: readonly boolean[]): void {
    const granted = allowed.filter(Boolean).length;
    if (granted > 0) this.decisions.inc({ allowed: 'true' }, granted);
    if (allowed.length > granted) this.decisions.inc({ allowed: 'false' }, allowed.length - granted);
  }
}
