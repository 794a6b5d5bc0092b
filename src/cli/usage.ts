import type { Config } from '../config.ts';
import { DEFAULT_CHECK_BUDGET } from '../engine/budget.ts';
import { DEFAULT_AUTH_FAILURE_LIMIT } from '../rate-limits.ts';
import { DEFAULT_TENANT_POOL_SHARE } from '../store/graph-statements.ts';

/** Every setting of the server, with its default: the type makes a new one need a line here. */
const SETTINGS: Record<keyof Config, string> = {
  PORT: 'port to listen on (default 8080)',
  HOST: 'address to listen on (default 0.0.0.0)',
  DATABASE_URL: 'postgres://... to use (default: an embedded PostgreSQL under GRANTD_DATA_DIR)',
  GRANTD_DATA_DIR: 'folder of the embedded database (default ./.grantd)',
  GRANTD_DB_POOL_SIZE: 'database connections per process (default 10)',
  GRANTD_RATE_LIMIT: 'requests per second per API key (default: unlimited)',
  GRANTD_AUTH_FAILURE_LIMIT: `failed authentications per second per client address (default ${DEFAULT_AUTH_FAILURE_LIMIT})`,
  REDIS_URL: 'redis:// or rediss:// URL of a Redis all nodes count rate limits in (default: none, per node)',
  GRANTD_TRUST_PROXY: 'proxies in front of grantd: how many, or their addresses and ranges (default: none)',
  GRANTD_GRAPH_MEMORY: 'grants and agents a process holds in memory to answer checks (default 3000000; 0: none)',
  GRANTD_CHECK_BUDGET: `the most steps one check may take (default ${DEFAULT_CHECK_BUDGET})`,
  GRANTD_TENANT_POOL_SHARE: `percent of the pool one tenant's checks and listings may hold at once (default ${DEFAULT_TENANT_POOL_SHARE})`,
  GRANTD_WORKERS: 'processes serving the API on one port: a number, or auto for one per core (default 1)',
  GRANTD_HEADERS_TIMEOUT: 'seconds a request has for its request line and headers (default 10)',
  GRANTD_BODY_TIMEOUT: 'seconds more for a body the API reads (default 20)',
  GRANTD_KEEP_ALIVE_TIMEOUT: 'seconds a connection may stay idle between requests (default 5)',
  GRANTD_MAX_CONNECTIONS: 'connections a process holds at most (default 4096)',
  GRANTD_METRICS_TOKEN: 'bearer token GET /metrics requires (default: none, /metrics is open)',
  LOG_LEVEL: 'fatal, error, warn, info, debug, trace or silent (default info)',
};

const settingLines = Object.entries(SETTINGS)
  .map(([name, meaning]) => `  ${name.padEnd(27)}${meaning}`)
  .join('\n');

export const USAGE = `grantd: multi-tenant relationship-based authorization service

Usage:
  grantd serve                        start the HTTP server (PORT, default 8080)
  grantd tenant create <name> [--json]  create a tenant and print its admin key once
  grantd migrate                      apply pending database migrations
  grantd import [file] [--json]       write the grants of an NDJSON file (standard input: none or -),
                                      one {"subject","relation","object"} per line, through the API

Environment (docs/configuration.md tells more of each):
${settingLines}

Environment of grantd import:
  GRANTD_URL                 the grantd to write to (default http://localhost:8080)
  GRANTD_KEY                 an API key with scope grant:write (as the walk-through in README.md sets it)
`;
