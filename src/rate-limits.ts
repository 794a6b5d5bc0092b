import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { Redis } from 'ioredis';
import { RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { DEFAULT_CONFIG } from './config.ts';

/** How long a worker waits for its primary's counters before it lets the request through. */
const CLUSTER_TIMEOUT_MS = 1_000;
/** How long a request waits for Redis before the node's own counters answer instead, unless told otherwise. */
const REDIS_COMMAND_TIMEOUT_MS = 250;

/** Whole seconds to wait, at least 1, for a limiter's milliseconds (0 or less when its window never ends). */
export const retryAfterSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/**
 * `points` a window per key, counted by a rate-limiter-flexible limiter (fixed windows). A limiter
 * that fails lets the request go on: a limit never fails a request.
 */
export class Limit {
  constructor(
    readonly points: number,
    readonly windowSeconds: number,
    private readonly limiter: RateLimiterAbstract,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Takes a point for the key: 0 when it may go on, else the whole seconds until it may (at least 1). */
  async take(key: string): Promise<number> {
    try {
      await this.limiter.consume(key);
      return 0;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return retryAfterSeconds(rejection.msBeforeNext);
      this.onError(rejection);
      return 0;
    }
  }

  /** "5 requests a second", or "5 requests in 60 s", for what is counted (requests, failed authentications). */
  describe(what: string): string {
    return this.windowSeconds === 1 ? `${this.points} ${what} a second` : `${this.points} ${what} in ${this.windowSeconds} s`;
  }
}

/**
 * Failed authentications per client address. Past the limit the address is refused before its key
 * is looked up until its window ends; the limiter is asked only when a failure happens, and this
 * process remembers (LRU) the addresses it saw refused, so an ordinary request pays nothing for it.
 */
export class FailedAuthentications {
  private readonly refused = new LRUCache<string, true>({ max: 100_000, ttl: 1_000, ttlResolution: 0, perf: { now: () => Date.now() } });

  constructor(readonly limit: Limit) {}

  /** Seconds the address must wait before any lookup of its keys; 0 when it may go on. */
  waitFor(address: string): number {
    const ms = this.refused.getRemainingTTL(address);
    return ms > 0 ? retryAfterSeconds(ms) : 0;
  }

  /** Counts a failure: 0 while the address is within its limit, else the seconds it must wait. */
  async record(address: string): Promise<number> {
    const wait = await this.limit.take(address);
    if (wait > 0) this.refused.set(address, true, { ttl: wait * 1_000 });
    return wait;
  }
}

export interface LimitsOptions {
  /** Requests a window per key (GRANTD_RATE_LIMIT); none when unset. */
  perKey?: number | undefined;
  /** Failed authentications a window per client address (GRANTD_AUTH_FAILURE_LIMIT). */
  authFailures?: number | undefined;
  /** OAuth authorization requests a window per client and per client address (GRANTD_AUTHORIZE_LIMIT). */
  authorizations?: number | undefined;
  /** Counters shared by every node in this Redis (REDIS_URL); per node without it. */
  redisUrl?: string | undefined;
  /** Prefix of the Redis keys of the counters (nodes that share limits share it). */
  redisKeyPrefix?: string;
  /** How long a request waits for Redis before the node's own counters answer instead. */
  redisCommandTimeoutMs?: number;
  /** A worker of a node: the node's counters are its primary's (RateLimiterClusterMaster). */
  clusterWorker?: boolean;
  /** The seconds each limit counts over (GRANTD_RATE_LIMIT_WINDOW). */
  windowSeconds?: number | undefined;
}

export interface Limits {
  perKey: Limit | null;
  authFailures: FailedAuthentications;
  /** OAuth authorization requests, each counted under its client (`client:<id>`) and its address (`address:<address>`). */
  authorizations: Limit;
  close: () => Promise<void>;
}

/**
 * The rate limits of one process. Without Redis they are per node: held in this process, or with
 * workers in the primary. With Redis they are shared by every node, and the node's counters stand
 * in while Redis cannot answer (rate-limiter-flexible's insurance limiter): a warning is logged,
 * and no request fails or waits for it beyond its command timeout.
 */
export function createLimits(options: LimitsOptions, logger: Logger): Limits {
  const { windowSeconds = 1, redisKeyPrefix = 'grantd:', redisCommandTimeoutMs = REDIS_COMMAND_TIMEOUT_MS, clusterWorker = false } = options;
  const redis = options.redisUrl ? connectRedis(options.redisUrl, redisCommandTimeoutMs, logger) : null;
  const onError = (error: unknown) =>
    logger.warn({ err: { message: (error as Error)?.message } }, 'a rate limit could not be counted; the request went on');

  const limit = (name: string, points: number): Limit => {
    const shape = { points, duration: windowSeconds };
    const perNode: RateLimiterAbstract = clusterWorker
      ? new RateLimiterCluster({ ...shape, keyPrefix: name, timeoutMs: CLUSTER_TIMEOUT_MS })
      : new RateLimiterMemory({ ...shape, keyPrefix: name });
    const limiter = redis
      ? new RateLimiterRedis({
          ...shape,
          storeClient: redis,
          keyPrefix: `${redisKeyPrefix}${name}`,
          insuranceLimiter: perNode,
          rejectIfRedisNotReady: true,
        })
      : perNode;
    return new Limit(points, windowSeconds, limiter, onError);
  };

  return {
    perKey: options.perKey ? limit('key', options.perKey) : null,
    authFailures: new FailedAuthentications(limit('auth-failures', options.authFailures ?? DEFAULT_CONFIG.GRANTD_AUTH_FAILURE_LIMIT)),
    authorizations: limit('authorize', options.authorizations ?? DEFAULT_CONFIG.GRANTD_AUTHORIZE_LIMIT),
    close: async () => {
      redis?.disconnect();
    },
  };
}

/**
 * A Redis connection that never makes a request wait for it: commands fail at once while it is
 * down (no offline queue) and after `commandTimeoutMs` when it hangs. It connects in the
 * background and keeps reconnecting; going down and coming back are logged once each.
 */
function connectRedis(url: string, commandTimeoutMs: number, logger: Logger): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
  let reachable: boolean | undefined;
  redis.on('ready', () => {
    if (reachable === false) logger.warn('Redis is reachable again: rate limits are shared by every node');
    reachable = true;
  });
  redis.on('error', (error: NodeJS.ErrnoException) => {
    if (reachable !== false)
      logger.warn({ err: { message: error.message, code: error.code } }, 'Redis is unreachable: rate limits are per node until it is back');
    reachable = false;
  });
  return redis;
}
