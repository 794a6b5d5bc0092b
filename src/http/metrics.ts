import type { Server } from 'node:http';
import type { Request, Response } from 'express';
import type pg from 'pg';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Limits } from '../rate-limits.ts';
import type { HeldTenants } from '../store/held-tenants.ts';

/** Upper bounds of the GC pause histogram, in seconds. */
const GC_PAUSE_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.1, 1];

interface Series {
  labels: { route: string; method: string; status: string };
  pending: number;
  latency: Histogram.Internal<string>;
}

/** The Prometheus metrics of one grantd process (its own registry, so that tests can build many apps). */
export class Metrics {
  readonly registry = new Registry();
  /** Each (route, method, status) seen: its labels, its requests counted since the last scrape, its latency histogram. */
  private readonly series = new Map<string, Map<string, Map<number, Series>>>();
  private readonly requests = new Counter({
    name: 'grantd_http_requests_total',
    help: 'HTTP requests answered, by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [this.registry],
    // prom-client hashes the labels on every increment: requests are counted in `series` and handed over when scraped.
    collect: () => {
      for (const byMethod of this.series.values()) {
        for (const byStatus of byMethod.values()) {
          for (const series of byStatus.values()) {
            if (series.pending > 0) this.requests.inc(series.labels, series.pending);
            series.pending = 0;
          }
        }
      }
    },
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
  /** Check answers counted since the last scrape, handed over to `decisions` when scraped (as requests are). */
  private readonly pendingDecisions = { allowed: 0, denied: 0 };
  private readonly decisions = new Counter({
    name: 'grantd_check_decisions_total',
    help: 'Check answers (single and bulk items), by outcome',
    labelNames: ['allowed'],
    registers: [this.registry],
    collect: () => {
      const { allowed, denied } = this.pendingDecisions;
      if (allowed > 0) this.decisions.inc({ allowed: 'true' }, allowed);
      if (denied > 0) this.decisions.inc({ allowed: 'false' }, denied);
      this.pendingDecisions.allowed = this.pendingDecisions.denied = 0;
    },
  });

  /**
   * `pools`: Prisma's, and the graph statements' own. `ofCluster`: in a cluster worker, the
   * exposition of every worker, which the primary aggregates.
   */
  constructor(
    pools: { db: pg.Pool; graph: pg.Pool },
    heldTenants: HeldTenants,
    limits: Pick<Limits, 'sharedNow'>,
    private readonly ofCluster?: () => Promise<string>,
  ) {
    const record = (res: Response) => this.record(res);
    this.finished = function (this: Response) {
      record(this);
    };
    // Garbage-collection pauses at the resolution of a check's latency (prom-client's default
    // buckets start at 1 ms, then 10): docs/configuration.md#operational-endpoints.
    collectDefaultMetrics({ register: this.registry, prefix: 'grantd_', gcDurationBuckets: GC_PAUSE_BUCKETS });
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
    if (limits.sharedNow() !== null) {
      gauge(
        'grantd_rate_limits_shared',
        'With REDIS_URL: 1 while rate limits are counted in Redis, 0 while it does not answer and each node counts on its own',
        () => (limits.sharedNow() ? 1 : 0),
      );
    }
  }

  /**
   * Counts and times every request, labelled by the contract route (not the raw path): a hook of
   * the app's one per-request middleware; one listener shared by all requests, no closure each.
   */
  observe = (_req: Request, res: Response): void => {
    res.on('finish', this.finished);
  };

  /** What a response's 'finish' event calls, with the response as `this` (set in the constructor). */
  private readonly finished: (this: Response) => void;

  private record(res: Response): void {
    const req = res.req;
    // Never the raw path: a label per path a client makes up would grow the registry without bound.
    const route =
      (req as Request & { tsRestRoute?: { path: string } }).tsRestRoute?.path ??
      (req.route as { path?: string } | undefined)?.path ??
      (res.statusCode === 404 ? 'unmatched' : 'other');
    // Nested maps rather than one keyed by a joined string: no string made per request.
    let byMethod = this.series.get(route);
    if (!byMethod) this.series.set(route, (byMethod = new Map<string, Map<number, Series>>()));
    let byStatus = byMethod.get(req.method);
    if (!byStatus) byMethod.set(req.method, (byStatus = new Map<number, Series>()));
    let series = byStatus.get(res.statusCode);
    if (!series) {
      const labels = { route, method: req.method, status: String(res.statusCode) };
      byStatus.set(res.statusCode, (series = { labels, pending: 0, latency: this.latency.labels(labels) }));
    }
    series.pending++;
    series.latency.observe((performance.now() - req.startedAt!) / 1000);
  }

  /** Counts the connections the server drops past its cap. */
  countDrops(server: Server): void {
    server.on('drop', () => this.droppedConnections.inc());
  }

  /** What GET /metrics shows: this process's metrics, or its cluster's. */
  exposition(): Promise<string> {
    return this.ofCluster ? this.ofCluster() : this.registry.metrics();
  }

  countDecision(allowed: boolean): void {
    if (allowed) this.pendingDecisions.allowed++;
    else this.pendingDecisions.denied++;
  }
}
