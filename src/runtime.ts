import type { Logger } from 'pino';
import { databaseLookups, KeyVerifier } from './auth/verifier.ts';
import { forgetBefore, forgetTenant, type Change } from './cluster/changes.ts';
import type { PrimaryLink } from './cluster/worker.ts';
import { CHANGE_WATCH_MS, FRESHNESS_MS, type Config } from './config.ts';
import { AuthorizationEngine } from './engine/engine.ts';
import { WorkMeter } from './engine/work-meter.ts';
import type { AppDeps } from './http/context.ts';
import { connect } from './store/db.ts';
import { Metrics } from './http/metrics.ts';
import { CheckRouter } from './store/check-router.ts';
import { SchemaCache } from './store/schema-cache.ts';
import { ChangeWatch } from './store/change-watch.ts';
import { HeldTenants } from './store/held-tenants.ts';
import { startExpiredGrantSweep } from './store/expired-grants.ts';
import { Freshness } from './store/freshness.ts';
import { startChangesSweep } from './store/revisions.ts';
import { startUnboundClientSweep } from './store/oauth-clients.ts';
import { createLimits } from './rate-limits.ts';
import { openGraphPool } from './store/graph-statements.ts';

/**
 * Everything the HTTP app needs, over the database at `url`, set up as `config` says. A cluster
 * worker passes its link to the primary, through which its writes reach the other workers' caches
 * and its metrics are shared; its rate limits count in the primary too (rate-limiter-flexible's
 * cluster limiters).
 */
export function createServices(url: string, config: Config, logger: Logger, primary?: PrimaryLink): AppDeps {
  const lost = (error: Error) => logger.warn({ err: { message: error.message } }, 'database connection lost');
  const { db, pool, close } = connect(url, config.GRANTD_DB_POOL_SIZE, lost);
  // Checks and listings on a pool of their own, so that they cannot take the connections of key lookups and writes.
  const graphPool = openGraphPool(url, config.GRANTD_DB_POOL_SIZE, lost);
  const limits = createLimits(
    {
      perKey: config.GRANTD_RATE_LIMIT,
      authFailures: config.GRANTD_AUTH_FAILURE_LIMIT,
      authorizations: config.GRANTD_AUTHORIZE_LIMIT,
      registrations: config.GRANTD_REGISTER_LIMIT,
      windowSeconds: config.GRANTD_RATE_LIMIT_WINDOW,
      redisUrl: config.REDIS_URL,
      clusterWorker: primary !== undefined,
    },
    logger,
  );
  // One statement every CHANGE_WATCH_MS keeps unchanged tenants' keys, schemas and grants held (docs/decisions.md#a-change-watch-keeps-unchanged-tenants-cached).
  const watch = new ChangeWatch(pool, { maxAgeMs: FRESHNESS_MS, intervalMs: CHANGE_WATCH_MS }, logger);
  watch.start();
  const schemas = new SchemaCache(pool, { watch });
  // One meter for all work in memory: checks, listings, explanations and replays (docs/decisions.md#one-meter-for-all-work-in-memory).
  const meter = new WorkMeter();
  // Each worker holds tenants of its own: its lines about them say which process it is.
  const heldTenants = new HeldTenants(
    pool,
    { maxGrants: config.GRANTD_GRAPH_MEMORY, maxAgeMs: FRESHNESS_MS, watch },
    logger.child({ pid: process.pid }),
    meter,
  );
  const checker = new CheckRouter(graphPool, schemas, heldTenants, {
    meter,
    checkBudget: config.GRANTD_CHECK_BUDGET,
    tenantPoolShare: config.GRANTD_TENANT_POOL_SHARE,
  });
  const caches = { schemas, engine: new AuthorizationEngine(checker), keys: new KeyVerifier(databaseLookups(db, pool), { watch }) };
  const stopSweep = startExpiredGrantSweep(db, { retentionMs: 1000 * config.GRANTD_EXPIRED_RETENTION }, logger);
  const stopChangesSweep = startChangesSweep(db, { retentionMs: 1000 * config.GRANTD_CHANGES_RETENTION }, logger);
  const stopUnboundClientSweep = startUnboundClientSweep(db, {}, logger);
  const freshness = new Freshness(db, (tenantId) => forgetTenant(caches, tenantId));
  return {
    db,
    pool,
    close: async () => {
      stopSweep();
      stopChangesSweep();
      stopUnboundClientSweep();
      await watch.stop();
      await heldTenants.close();
      await limits.close();
      await close();
      await graphPool.end();
    },
    metrics: new Metrics({ db: pool, graph: graphPool }, heldTenants, limits, primary ? () => primary.metrics() : undefined),
    limits,
    trustProxy: config.GRANTD_TRUST_PROXY ?? false,
    ...caches,
    heldTenants,
    freshness,
    announce: async (change: Change) => {
      forgetBefore(caches, change);
      await primary?.announce(change);
    },
    logger,
    ready: async () => {
      await db.$queryRaw`SELECT 1`;
    },
  };
}
