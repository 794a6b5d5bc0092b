import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { DEFAULT_CHECK_BUDGET } from './engine/budget.ts';

/**
 * The freshness bound: the longest a process uses what it holds in memory (verified keys, compiled
 * schemas, check answers, grants) before it asks the database again, and so the longest a write on
 * another node takes to show here. Not a setting: the consistency the documentation promises.
 */
export const FRESHNESS_MS = 500;

/**
 * How often each process polls the changes of every tenant (src/store/change-watch.ts): what it
 * holds of a tenant unchanged since is used past FRESHNESS_MS. Well under it, so that a poll late by
 * a few hundred ms leaves the caches on the watch's word; a poll that is later still puts them back
 * on FRESHNESS_MS.
 */
export const CHANGE_WATCH_MS = 200;

const optionalPositiveInt = (name: string) =>
  z
    .string()
    .regex(/^[1-9][0-9]{0,8}$/, `${name} must be a positive integer`)
    .transform(Number)
    .optional();

const nonNegativeInt = (name: string) =>
  z
    .string()
    .regex(/^(0|[1-9][0-9]{0,9})$/, `${name} must be a whole number, 0 or more`)
    .transform(Number);

const TRUST_PROXY_PRESETS = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, an address/prefix-length or one of Express's names for a range. */
function isProxyAddress(entry: string): boolean {
  if (TRUST_PROXY_PRESETS.has(entry)) return true;
  const [address = '', bits, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  return bits === undefined || (/^[0-9]{1,3}$/.test(bits) && Number(bits) <= (version === 4 ? 32 : 128));
}

const isRedisUrl = (value: string): boolean => {
  try {
    const url = new URL(value);
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
  } catch {
    return false;
  }
};

const isPublicUrl = (value: string): boolean => {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '' && !value.includes('#');
  } catch {
    return false;
  }
};

const seconds = (name: string) =>
  z
    .string()
    .regex(/^[1-9][0-9]{0,4}$/, `${name} must be a whole number of seconds from 1 to 99999`)
    .transform(Number);

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
/** A duration in seconds: a whole number, alone (seconds) or followed by s, m, h or d (`7d`). */
const duration = (name: string) =>
  z
    .string()
    .regex(/^[1-9][0-9]{0,7}[smhd]?$/, `${name} must be a whole number of seconds, or of minutes, hours or days with m, h or d (7d)`)
    .transform((value) => {
      const unit = /[smhd]$/.test(value) ? (value.at(-1) as keyof typeof UNIT_SECONDS) : 's';
      return Number.parseInt(value, 10) * UNIT_SECONDS[unit];
    });

/**
 * Every setting grantd reads from the environment, with its default and its check. A command parses
 * them once (loadConfig) and passes the result down as it is, so a setting has one name everywhere:
 * its variable's, in the environment, the code and docs/configuration.md.
 */
export const EnvSchema = z.object({
  PORT: z
    .string()
    .regex(/^[0-9]{1,5}$/, 'PORT must be a port number')
    .transform(Number)
    .refine((p) => p <= 65535, 'PORT must be at most 65535')
    .default('8080'),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must be a postgres:// or postgresql:// URL')
    .optional(),
  GRANTD_DATA_DIR: z.string().min(1).default('./.grantd'),
  GRANTD_DB_POOL_SIZE: optionalPositiveInt('GRANTD_DB_POOL_SIZE').default('10'),
  GRANTD_RATE_LIMIT: optionalPositiveInt('GRANTD_RATE_LIMIT'),
  GRANTD_AUTH_FAILURE_LIMIT: optionalPositiveInt('GRANTD_AUTH_FAILURE_LIMIT').default('20'),
  GRANTD_AUTHORIZE_LIMIT: optionalPositiveInt('GRANTD_AUTHORIZE_LIMIT').default('10'),
  GRANTD_REGISTER_LIMIT: optionalPositiveInt('GRANTD_REGISTER_LIMIT').default('20'),
  GRANTD_RATE_LIMIT_WINDOW: optionalPositiveInt('GRANTD_RATE_LIMIT_WINDOW').default('1'),
  REDIS_URL: z.string().refine(isRedisUrl, 'REDIS_URL must be a redis:// or rediss:// URL with a host').optional(),
  // A number of proxy hops, or the proxies' addresses and ranges; `true` (believe anyone) is refused.
  GRANTD_TRUST_PROXY: z
    .string()
    .refine(
      (value) => /^[1-9][0-9]?$/.test(value) || value.split(',').every((entry) => isProxyAddress(entry.trim())),
      'GRANTD_TRUST_PROXY must be a number of proxies (1-99) or a comma-separated list of addresses, address/bits, loopback, linklocal or uniquelocal',
    )
    .transform((value) => (/^[0-9]+$/.test(value) ? Number(value) : value))
    .optional(),
  // Grants (and agents) a process holds in memory; what a grant costs: docs/decisions.md#grants-held-in-memory.
  GRANTD_GRAPH_MEMORY: nonNegativeInt('GRANTD_GRAPH_MEMORY').default('3000000'),
  // Its default is the engine's (engine/budget.ts tells why): the engine reads no environment.
  GRANTD_CHECK_BUDGET: optionalPositiveInt('GRANTD_CHECK_BUDGET').default(String(DEFAULT_CHECK_BUDGET)),
  GRANTD_TENANT_POOL_SHARE: z
    .string()
    .regex(/^([1-9][0-9]?|100)$/, 'GRANTD_TENANT_POOL_SHARE must be a percentage from 1 to 100')
    .transform(Number)
    .default('50'),
  GRANTD_WORKERS: z
    .string()
    .regex(/^(auto|[1-9][0-9]{0,2})$/, 'GRANTD_WORKERS must be auto or a number of processes from 1 to 999')
    .transform((value) => (value === 'auto' ? availableParallelism() : Number(value)))
    .default('1'),
  GRANTD_HEADERS_TIMEOUT: seconds('GRANTD_HEADERS_TIMEOUT').default('10'),
  GRANTD_BODY_TIMEOUT: seconds('GRANTD_BODY_TIMEOUT').default('20'),
  GRANTD_KEEP_ALIVE_TIMEOUT: seconds('GRANTD_KEEP_ALIVE_TIMEOUT').default('5'),
  GRANTD_MAX_CONNECTIONS: optionalPositiveInt('GRANTD_MAX_CONNECTIONS').default('4096'),
  GRANTD_METRICS_TOKEN: z
    .string()
    .regex(/^[\x21-\x7e]{16,1024}$/, 'GRANTD_METRICS_TOKEN must be 16 to 1024 visible ASCII characters, without spaces')
    .optional(),
  // The OAuth issuer and the address metadata documents advertise; http://localhost:<PORT> when unset (publicUrl).
  GRANTD_PUBLIC_URL: z
    .string()
    .refine(isPublicUrl, 'GRANTD_PUBLIC_URL must be an http:// or https:// URL without a query or fragment')
    .transform((value) => value.replace(/\/+$/, ''))
    .optional(),
  GRANTD_OAUTH_ACCESS_TTL: seconds('GRANTD_OAUTH_ACCESS_TTL').default('3600'),
  // How long an expired grant is kept (it confers nothing) before the background sweep deletes it.
  GRANTD_EXPIRED_RETENTION: nonNegativeInt('GRANTD_EXPIRED_RETENTION').default('3600'),
  // How long the changes feed keeps a change (GET /v1/changes); older positions are 410 changes-expired.
  GRANTD_CHANGES_RETENTION: duration('GRANTD_CHANGES_RETENTION').default('7d'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Config = z.infer<typeof EnvSchema>;

/** Where grantd is reached: GRANTD_PUBLIC_URL, else http://localhost:<PORT>. */
export const publicUrl = (config: Pick<Config, 'GRANTD_PUBLIC_URL' | 'PORT'>): string =>
  config.GRANTD_PUBLIC_URL ?? `http://localhost:${config.PORT}`;

/** Reads grantd's settings from the environment; throws one line per bad value, naming it. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

export class ConfigError extends Error {}

/** The settings of an environment that sets none of them: what a module not given one falls back on. */
export const DEFAULT_CONFIG: Config = loadConfig({});
