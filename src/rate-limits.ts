import { setImmediate } from 'node:timers';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { Redis } from 'ioredis';
import { RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { DEFAULT_CONFIG } from './config.ts';

/** How long a worker waits for its primary's counters before it lets the request through. */
const CLUSTER_TIMEOUT_MS = 1_000;
/** How long a request waits for Redis before the node's own counters answer instead, unless told otherwise (docs/configuration.md: at most 50 ms). */
const REDIS_COMMAND_TIMEOUT_MS = 50;
/** How often a Redis that stopped answering is asked again (PING) while the node counts on its own. */
const REDIS_PROBE_MS = 1_000;

/** The window of GRANTD_REGISTER_LIMIT. */
const REGISTRATION_WINDOW_S = 3600;

/** Whole seconds to wait, at least 1, for a limiter's milliseconds (0 or less when its window never ends). */
export const retryAfterSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/** Counters shared through Redis, used while Redis answers (`link.answering`). */
interface Shared {
  limiter: RateLimiterAbstract;
  link: RedisLink;
}

/**
 * `points` a window per key, counted by a rate-limiter-flexible limiter (fixed windows): in Redis
 * while it answers, else by the node's own counters. A limiter that fails lets the request go on: a
 * limit never fails a request.
 *
 * What a turn of the event loop takes and gives back for a key is counted together at the turn's
 * end: one message to the primary or to Redis for a key, not one a request (a node starting under
 * load looks up hundreds of new keys a second, and each message wakes the primary). The points
 * taken together are granted in the order they were asked, as many as the limit had left.
 */
export class Limit {
  /** Takes asked for in this turn, per key, in order. */
  private asked = new Map<string, ((wait: number) => void)[]>();
  /** Points given back in this turn, per key. */
  private given = new Map<string, number>();
  private flushing = false;

  constructor(
    readonly points: number,
    readonly windowSeconds: number,
    private readonly perNode: RateLimiterAbstract,
    private readonly onError: (error: unknown) => void,
    private readonly shared: Shared | null = null,
  ) {}

  /** Takes a point for the key: 0 when it may go on, else the whole seconds until it may (at least 1). */
  take(key: string): Promise<number> {
    return new Promise((granted) => {
      const waiting = this.asked.get(key);
      if (waiting) waiting.push(granted);
      else this.asked.set(key, [granted]);
      this.flushAtTurnEnd();
    });
  }

  /** Gives back a point taken for the key (a failure that did not happen); a limiter that fails keeps it. */
  give(key: string): void {
    this.given.set(key, (this.given.get(key) ?? 0) + 1);
    this.flushAtTurnEnd();
  }

  private flushAtTurnEnd(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => this.flush());
  }

  /** Points given back first (they may be what a take now finds), then each key's takes as one consume. */
  private flush(): void {
    const [asked, given] = [this.asked, this.given];
    this.asked = new Map<string, ((wait: number) => void)[]>();
    this.given = new Map<string, number>();
    this.flushing = false;
    for (const [key, points] of given) {
      this.limiter()
        .reward(key, points)
        .catch(() => undefined);
    }
    for (const [key, waiting] of asked) {
      void this.consume(key, waiting.length).then((grant) => waiting.forEach((granted, i) => granted(grant(i))));
    }
  }

  /** Consumes `points` for the key; what the i-th of them waits (0: it may go on). */
  private async consume(key: string, points: number): Promise<(i: number) => number> {
    const limiter = this.limiter();
    try {
      await limiter.consume(key, points);
      return () => 0;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        // All were counted; those within what the window had left before them go on.
        const left = Math.max(0, this.points - (rejection.consumedPoints - points));
        const wait = retryAfterSeconds(rejection.msBeforeNext);
        return (i) => (i < left ? 0 : wait);
      }
      // Redis did not answer in time: the node counts these requests, and the next ones until Redis answers again.
      if (limiter !== this.perNode) {
        this.shared!.link.missed(rejection);
        return this.consume(key, points);
      }
      this.onError(rejection);
      return () => 0;
    }
  }

  private limiter(): RateLimiterAbstract {
    return this.shared?.link.answering ? this.shared.limiter : this.perNode;
  }

  /** "5 requests a second", or "5 requests in 60 s", for what is counted (requests, failed authentications). */
  describe(what: string): string {
    return this.windowSeconds === 1 ? `${this.points} ${what} a second` : `${this.points} ${what} in ${this.windowSeconds} s`;
  }
}

/**
 * Failed authentications per client address. Past the limit the address is refused before its key
 * is looked up until its window ends; the limiter is asked only when a key must be looked up (one
 * this node holds verified is not), and this process remembers (LRU) the addresses it saw refused,
 * so an ordinary request pays nothing for it. On /v1 an attempt is counted before its lookup and
 * given back when the key is found (`give`), so concurrent attempts cannot pass the limit together.
 */
export class FailedAuthentications {
  private readonly refused = new LRUCache<string, true>({ max: 100_000, ttl: 1_000, ttlResolution: 0, perf: { now: () => Date.now() } });

  constructor(readonly limit: Limit) {}

  /** Seconds the address must wait before any lookup of its keys; 0 when it may go on. */
  waitFor(address: string): number {
    const ms = this.refused.getRemainingTTL(address);
    return ms > 0 ? retryAfterSeconds(ms) : 0;
  }

  /** Counts a failure, or an attempt that may be one: 0 while the address is within its limit, else the seconds it must wait. */
  async record(address: string): Promise<number> {
    const wait = await this.limit.take(address);
    if (wait > 0) this.refused.set(address, true, { ttl: wait * 1_000 });
    return wait;
  }

  /** Gives back what `record` counted for an attempt that was no failure (it succeeded, or could not be decided). */
  succeeded(address: string): void {
    this.limit.give(address);
  }
}

export interface LimitsOptions {
  /** Requests a window per key (GRANTD_RATE_LIMIT); none when unset. */
  perKey?: number | undefined;
  /** Failed authentications a window per client address (GRANTD_AUTH_FAILURE_LIMIT). */
  authFailures?: number | undefined;
  /** OAuth authorization requests a window per client and per client address (GRANTD_AUTHORIZE_LIMIT). */
  authorizations?: number | undefined;
  /** Dynamic client registrations an hour per client address (GRANTD_REGISTER_LIMIT). */
  registrations?: number | undefined;
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
  /** With Redis: whether the limits are counted there now (false while it does not answer); null without Redis. */
  sharedNow: () => boolean | null;
  /** OAuth authorization requests, each counted under its client (`client:<id>`) and its address (`address:<address>`). */
  authorizations: Limit;
  /** Dynamic client registrations (POST /v1/oauth/register), counted under the client address. */
  registrations: Limit;
  close: () => Promise<void>;
}

/**
 * The rate limits of one process. Without Redis they are per node: held in this process, or with
 * workers in the primary. With Redis they are shared by every node, and the node's counters stand
 * in while Redis cannot answer (RedisLink): a warning is logged once, and no request fails or
 * waits for Redis beyond one command timeout, after which none waits for it at all.
 */
export function createLimits(options: LimitsOptions, logger: Logger): Limits {
  const {
    windowSeconds = DEFAULT_CONFIG.GRANTD_RATE_LIMIT_WINDOW,
    redisKeyPrefix = 'grantd:',
    redisCommandTimeoutMs = REDIS_COMMAND_TIMEOUT_MS,
    clusterWorker = false,
  } = options;
  const link = options.redisUrl ? new RedisLink(options.redisUrl, redisCommandTimeoutMs, logger) : null;
  const onError = (error: unknown) =>
    logger.warn({ err: { message: (error as Error)?.message } }, 'a rate limit could not be counted; the request went on');

  const limit = (name: string, points: number, duration = windowSeconds): Limit => {
    const shape = { points, duration };
    const perNode: RateLimiterAbstract = clusterWorker
      ? new RateLimiterCluster({ ...shape, keyPrefix: name, timeoutMs: CLUSTER_TIMEOUT_MS })
      : new RateLimiterMemory({ ...shape, keyPrefix: name });
    const shared = link && {
      limiter: new RateLimiterRedis({ ...shape, storeClient: link.redis, keyPrefix: `${redisKeyPrefix}${name}`, rejectIfRedisNotReady: true }),
      link,
    };
    return new Limit(points, duration, perNode, onError, shared);
  };

  return {
    perKey: options.perKey ? limit('key', options.perKey) : null,
    authFailures: new FailedAuthentications(limit('auth-failures', options.authFailures ?? DEFAULT_CONFIG.GRANTD_AUTH_FAILURE_LIMIT)),
    sharedNow: () => (link ? link.answering : null),
    authorizations: limit('authorize', options.authorizations ?? DEFAULT_CONFIG.GRANTD_AUTHORIZE_LIMIT),
    // An hour, whatever GRANTD_RATE_LIMIT_WINDOW: each registration is a row kept up to a day.
    registrations: limit('register', options.registrations ?? DEFAULT_CONFIG.GRANTD_REGISTER_LIMIT, REGISTRATION_WINDOW_S),
    close: async () => {
      link?.close();
    },
  };
}

/**
 * A Redis connection that never makes a request wait for it: commands fail at once while it is
 * down (no offline queue) and after `commandTimeoutMs` when it hangs (a Redis that accepts
 * connections but does not answer, CLIENT PAUSE say). Either way it is taken as down at the first
 * miss: limits count on the node, with no command sent, until a PING sent every second answers.
 * It connects in the background and keeps reconnecting; going down and coming back are logged once each.
 */
class RedisLink {
  readonly redis: Redis;
  /** Whether commands go to Redis: false until it is ready, and from a miss until a PING answers. */
  answering = false;
  private probe: NodeJS.Timeout | undefined;
  /** Whether this outage was logged. */
  private warned = false;

  constructor(
    url: string,
    commandTimeoutMs: number,
    private readonly logger: Logger,
  ) {
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      commandTimeout: commandTimeoutMs,
      connectTimeout: 2_000,
      maxRetriesPerRequest: 0,
      retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
    });
    this.redis.on('ready', () => this.answered());
    this.redis.on('error', (error: NodeJS.ErrnoException) => this.missed(error));
  }

  /** A command failed or timed out: counts stay on the node until Redis answers a PING. */
  missed(error: unknown): void {
    const { message, code } = (error ?? {}) as NodeJS.ErrnoException;
    if (!this.warned) {
      this.logger.warn({ err: { message, code } }, 'Redis is unreachable: rate limits are per node until it is back');
      this.warned = true;
    }
    this.answering = false;
    this.probe ??= setInterval(() => {
      if (this.redis.status === 'ready')
        this.redis.ping().then(
          () => this.answered(),
          () => undefined,
        );
    }, REDIS_PROBE_MS).unref();
  }

  close(): void {
    clearInterval(this.probe);
    this.redis.disconnect();
  }

  private answered(): void {
    clearInterval(this.probe);
    this.probe = undefined;
    if (this.warned) this.logger.warn('Redis is reachable again: rate limits are shared by every node');
    this.warned = false;
    this.answering = true;
  }
}
