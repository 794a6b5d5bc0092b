import { DEFAULT_CONFIG as D, type Config } from '../config.ts';

/** Every setting of the server, with its default: the type makes a new one need a line here. */
const SETTINGS: Record<keyof Config, string> = {
  PORT: `port to listen on (default ${D.PORT})`,
  HOST: `address to listen on (default ${D.HOST})`,
  DATABASE_URL: 'postgres://... to use (default: an embedded PostgreSQL under GRANTD_DATA_DIR)',
  GRANTD_DATA_DIR: `folder of the embedded database (default ${D.GRANTD_DATA_DIR})`,
  GRANTD_DB_POOL_SIZE: `database connections per process (default ${D.GRANTD_DB_POOL_SIZE})`,
  GRANTD_RATE_LIMIT: 'requests per second per API key (default: unlimited)',
  GRANTD_AUTH_FAILURE_LIMIT: `failed authentications per second per client address (default ${D.GRANTD_AUTH_FAILURE_LIMIT})`,
  GRANTD_AUTHORIZE_LIMIT: `OAuth authorization requests per second per client and per client address (default ${D.GRANTD_AUTHORIZE_LIMIT})`,
  GRANTD_REGISTER_LIMIT: `OAuth dynamic client registrations per hour per client address (default ${D.GRANTD_REGISTER_LIMIT})`,
  GRANTD_RATE_LIMIT_WINDOW: `the seconds the limits count over (default ${D.GRANTD_RATE_LIMIT_WINDOW})`,
  REDIS_URL: 'redis:// or rediss:// URL of a Redis all nodes count rate limits in (default: none, per node)',
  GRANTD_TRUST_PROXY: 'proxies in front of grantd: how many, or their addresses and ranges (default: none)',
  GRANTD_GRAPH_MEMORY: `grants and agents a process holds in memory to answer checks, 0 for none (default ${D.GRANTD_GRAPH_MEMORY})`,
  GRANTD_CHECK_BUDGET: `the most steps one check may take (default ${D.GRANTD_CHECK_BUDGET})`,
  GRANTD_TENANT_POOL_SHARE: `percent of the pool one tenant's checks and listings may hold at once (default ${D.GRANTD_TENANT_POOL_SHARE})`,
  GRANTD_WORKERS: `processes serving the API on one port: a number, or auto for one per core (default ${D.GRANTD_WORKERS})`,
  GRANTD_HEADERS_TIMEOUT: `seconds a request has for its request line and headers (default ${D.GRANTD_HEADERS_TIMEOUT})`,
  GRANTD_BODY_TIMEOUT: `seconds more for a body the API reads (default ${D.GRANTD_BODY_TIMEOUT})`,
  GRANTD_KEEP_ALIVE_TIMEOUT: `seconds a connection may stay idle between requests (default ${D.GRANTD_KEEP_ALIVE_TIMEOUT})`,
  GRANTD_MAX_CONNECTIONS: `connections a process holds at most (default ${D.GRANTD_MAX_CONNECTIONS})`,
  GRANTD_METRICS_TOKEN: 'bearer token GET /metrics requires (default: none, /metrics is open)',
  GRANTD_PUBLIC_URL: 'URL clients reach grantd at: the OAuth issuer (default http://localhost:<PORT>)',
  GRANTD_OAUTH_ACCESS_TTL: `seconds an OAuth access token lives (default ${D.GRANTD_OAUTH_ACCESS_TTL})`,
  GRANTD_EXPIRED_RETENTION: `seconds an expired grant is kept before the background sweep deletes it (default ${D.GRANTD_EXPIRED_RETENTION})`,
  GRANTD_CHANGES_RETENTION: `seconds the changes feed keeps a change, or a number with m, h or d such as 7d (default ${D.GRANTD_CHANGES_RETENTION})`,
  LOG_LEVEL: `fatal, error, warn, info, debug, trace or silent (default ${D.LOG_LEVEL})`,
};

const settingLines = Object.entries(SETTINGS)
  .map(([name, meaning]) => `  ${name.padEnd(27)}${meaning}`)
  .join('\n');

/** The server's environment, after the commands in `grantd --help` (and `grantd serve --help`). */
export const SERVER_ENVIRONMENT = `
Environment of grantd serve, migrate, tenant and key (docs/configuration.md tells more of each):
${settingLines}
`;
