import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import type pg from 'pg';
import pino from 'pino';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { Metrics } from '../../src/http/metrics.ts';
import { createLimits, type Limits } from '../../src/rate-limits.ts';
import { newTenant, useServices, type TestTenant } from '../helpers.ts';

const REDIS_URL = 'redis://127.0.0.1:6379';
/** Nothing listens on port 1. */
const CLOSED_REDIS_URL = 'redis://127.0.0.1:1';

/** A logger whose warnings the test reads. */
function recordingLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, sink), lines };
}

/**
 * Two nodes (two apps, each with its own services) on this run's database and a Redis, with a
 * per-key limit of 3 in a window of 60 s (which cannot end during the test), under Redis keys
 * unique to this run. Their Redis commands may take a minute: on a loaded machine a command slower
 * than the default 250 ms would be counted by its node alone.
 */
function twoNodes(redisUrl: string) {
  const services = [useServices(), useServices()];
  const redisKeyPrefix = `grantd-test:${randomBytes(6).toString('hex')}:`;
  const recorded = recordingLogger();
  const limits: Limits[] = services.map(() =>
    createLimits({ perKey: 3, windowSeconds: 60, redisUrl, redisKeyPrefix, redisCommandTimeoutMs: 60_000 }, recorded.logger),
  );
  const apps = services.map((node, i) => createApp({ ...node, limits: limits[i]! }));
  afterAll(async () => {
    await Promise.all(limits.map((limit) => limit.close()));
  });
  /** Statuses of `count` requests with the key, alternating between the nodes. */
  const alternate = async (key: string, count: number) => {
    const statuses: number[] = [];
    for (let i = 0; i < count; i++) {
      const res = await supertest(apps[i % 2]!)
        .get('/v1/namespaces')
        .set('Authorization', `Bearer ${key}`);
      statuses.push(res.status);
    }
    return statuses;
  };
  return { services, limits, redisKeyPrefix, alternate, warnings: recorded.lines };
}

describe('rate limits shared through Redis', () => {
  const nodes = twoNodes(REDIS_URL);
  let tenant: TestTenant;

  const redis = new Redis(REDIS_URL);
  afterAll(() => redis.disconnect());

  beforeAll(async () => {
    tenant = await newTenant(nodes.services[0]!);
    // Each node connects in the background, counting on its own until then: wait until a point it takes lands in Redis.
    await vi.waitFor(
      async () => {
        for (const [i, limit] of nodes.limits.entries()) {
          await limit.perKey!.take(`probe${i}`);
          expect(await redis.exists(`${nodes.redisKeyPrefix}key:probe${i}`)).toBe(1);
        }
      },
      { timeout: 10_000 },
    );
  });

  it("holds one key's limit across both nodes", async () => {
    const key = await tenant.keyWith('grant:read');
    expect(await nodes.alternate(key, 6)).toEqual([200, 200, 200, 429, 429, 429]);
    expect(nodes.warnings).toEqual([]);
  });
});

describe('rate limits while Redis is unreachable', () => {
  const nodes = twoNodes(CLOSED_REDIS_URL);
  let tenant: TestTenant;

  beforeAll(async () => {
    tenant = await newTenant(nodes.services[0]!);
  });

  it('answers every request, limits each node on its own, and logs a warning', async () => {
    const key = await tenant.keyWith('grant:read');
    expect(await nodes.alternate(key, 8)).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    await vi.waitFor(() => expect(nodes.warnings.join('')).toMatch(/"level":40.*Redis is unreachable: rate limits are per node until it is back/));
    expect(nodes.warnings.join('')).not.toContain('svc_live_');
  });
});

/**
 * A Redis of this test's own, on a free port: pausing the machine's would stall the other tests
 * that share it (the nodes of test/e2e/nodes.test.ts, this file in the other project).
 */
async function privateRedis(): Promise<{ url: string; stop: () => void }> {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as AddressInfo;
      probe.close(() => resolve(free));
    });
  });
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => 50 });
  await vi.waitFor(() => probe.ping(), { timeout: 10_000, interval: 50 });
  probe.disconnect();
  return { url, stop: () => server.kill() };
}

describe('rate limits while Redis accepts connections but does not answer (CLIENT PAUSE)', () => {
  const services = useServices();
  const recorded = recordingLogger();
  let redis: Awaited<ReturnType<typeof privateRedis>>;
  let limits: Limits;
  let app: ReturnType<typeof createApp>;
  let metrics: Metrics;
  let admin: Redis;
  let key: string;
  afterAll(async () => {
    admin.disconnect();
    await limits.close();
    redis.stop();
  });

  beforeAll(async () => {
    redis = await privateRedis();
    limits = createLimits({ perKey: 1_000, windowSeconds: 60, redisUrl: redis.url, redisKeyPrefix: 'grantd-test:' }, recorded.logger);
    app = createApp({ ...services, limits });
    const idlePool = { totalCount: 0, idleCount: 0, waitingCount: 0 } as pg.Pool;
    metrics = new Metrics({ db: idlePool, graph: idlePool }, services.heldTenants, limits);
    admin = new Redis(redis.url);
    key = await (await newTenant(services)).keyWith('grant:read');
    await vi.waitFor(() => expect(limits.sharedNow()).toBe(true), { timeout: 10_000 });
  });

  const shared = async () => (await metrics.registry.getSingleMetricAsString('grantd_rate_limits_shared')).split('\n').at(-1);
  const namespaces = () => supertest(app).get('/v1/namespaces').set('Authorization', `Bearer ${key}`).expect(200);

  it('answers without waiting for it after its first miss, counts on the node, logs it once and shows it in a metric', async () => {
    await namespaces();
    expect(await shared()).toBe('grantd_rate_limits_shared 1');
    // Paused for 5 s, which ends by itself; a PING sent now is answered when the pause ends.
    await admin.client('PAUSE', 5_000, 'ALL');
    const unpaused = admin.ping().then(() => 'unpaused' as const);
    const answered = (async () => {
      // Were each to wait for Redis's command timeout of old (250 ms), these would outlast the pause.
      for (let i = 0; i < 40; i++) await namespaces();
      return 'answered' as const;
    })();
    expect(await Promise.race([answered, unpaused])).toBe('answered');
    expect(limits.sharedNow()).toBe(false);
    expect(await shared()).toBe('grantd_rate_limits_shared 0');

    // Once Redis answers again (a PING every second), the limits are shared again.
    await unpaused;
    await vi.waitFor(() => expect(limits.sharedNow()).toBe(true), { timeout: 10_000 });
    await namespaces();
    const lines = recorded.lines.join('');
    expect(lines.match(/Redis is unreachable/g)).toHaveLength(1);
    expect(lines.match(/Redis is reachable again/g)).toHaveLength(1);
  }, 30_000);
});
