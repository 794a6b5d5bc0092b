import pino from 'pino';
import supertest from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { DEFAULT_HTTP_OPTIONS } from '../../src/http/options.ts';
import { createLimits, retryAfterSeconds } from '../../src/rate-limits.ts';
import { client, newTenant, useApp, useServices } from '../helpers.ts';

describe('GET /metrics', () => {
  const { services, app } = useApp();

  it('exposes request counts and latencies per route and status, check decisions and pool gauges', async () => {
    const tenant = await newTenant(services);
    const api = client(app, tenant.adminKey);
    await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
    await api.post('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(201);
    await api.post('/v1/check', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(200);
    await api.post('/v1/check/bulk', { checks: [{ subject: 'user:b', relation: 'viewer', object: 'doc:1' }] }).expect(200);
    await api.get('/v1/nothing').expect(404);
    const res = await supertest(app).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toMatch(/grantd_http_requests_total\{route="\/v1\/check",method="POST",status="200"\} 1/);
    expect(res.text).toMatch(/grantd_http_request_duration_seconds_bucket\{le="0.005",route="\/v1\/check",method="POST",status="200"\}/);
    expect(res.text).toMatch(/grantd_http_requests_total\{route="unmatched",method="GET",status="404"\} 1/);
    expect(res.text).toMatch(/grantd_check_decisions_total\{allowed="true"\} 1/);
    expect(res.text).toMatch(/grantd_check_decisions_total\{allowed="false"\} 1/);
    expect(res.text).toMatch(/grantd_db_pool_connections \d+/);
    // The names the grants held use count against GRANTD_GRAPH_MEMORY too: the gauge does not claim to reach it.
    expect(res.text).toContain(
      '# HELP grantd_graph_memory_grants Grants and agents held in memory to answer checks; they and the names they use (4 grants a name) count against GRANTD_GRAPH_MEMORY\n',
    );
    expect(res.text).not.toContain('svc_live_');
    // Nothing names a tenant, a key or what a tenant stores: labels are routes, methods, statuses and decisions.
    for (const named of [tenant.id, 'key_', 'user:a', 'doc:1']) expect(res.text).not.toContain(named);
  });

  it('counts garbage-collection pauses in buckets down to half a millisecond', async () => {
    // Enough garbage for a young-generation collection, whatever the semi-space (objects kept in an
    // array until the end, so that no compiler can leave them unallocated).
    const churn = () => Array.from({ length: 500_000 }, (_, i) => ({ i })).length;
    await expect
      .poll(async () => {
        churn();
        return (await supertest(app).get('/metrics')).text;
      })
      .toMatch(/grantd_nodejs_gc_duration_seconds_bucket\{le="0\.0005",kind="minor"\} \d+/);
  });

  it('labels requests by route, never by a path the client made up', async () => {
    await supertest(app).get('/healthz').expect(200);
    for (const path of ['/docs/%ZZmade-up-1', '/v1/agents/%E0%A4%Amade-up-2', '/made-up-3']) await supertest(app).get(path);
    const res = await supertest(app).get('/metrics');
    expect(res.text).toMatch(/grantd_http_requests_total\{route="\/healthz",method="GET",status="200"\} 1/);
    expect(res.text).not.toContain('made-up');
  });
});

describe('GET /metrics with GRANTD_METRICS_TOKEN', () => {
  const { services } = useApp();
  const token = 'metrics-token-0123456789';
  const guarded = createApp(services, { ...DEFAULT_HTTP_OPTIONS, metricsToken: token });

  it('answers with the token as a bearer credential', async () => {
    const res = await supertest(guarded).get('/metrics').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/grantd_http_requests_total/);
  });

  it('answers 401 unauthenticated with WWW-Authenticate: Bearer without it, with another token, or with an API key', async () => {
    const tenant = await newTenant(services);
    const attempts = [undefined, `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, `Basic ${token}`, `Bearer ${tenant.adminKey}`];
    for (const authorization of attempts) {
      const request = supertest(guarded).get('/metrics');
      const res = await (authorization ? request.set('Authorization', authorization) : request);
      expect(res.status, authorization).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="grantd-metrics"/);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ type: 'unauthenticated', status: 401 });
      expect(res.text).not.toContain(token);
    }
  });

  it('leaves the other unauthenticated endpoints open', async () => {
    expect((await supertest(guarded).get('/healthz')).status).toBe(200);
    expect((await supertest(guarded).get('/readyz')).status).toBe(200);
  });
});

describe('per-key rate limits', () => {
  const services = useServices();
  // A window that cannot end during the test: what it shows does not depend on the machine's speed.
  const limits = createLimits({ perKey: 5, windowSeconds: 3600 }, pino({ level: 'silent' }));
  const app = createApp({ ...services, limits });
  afterAll(() => limits.close());
  let noisy: string;
  let quiet: string;

  beforeAll(async () => {
    const tenant = await newTenant(services);
    noisy = await tenant.keyWith('grant:read');
    quiet = await tenant.keyWith('grant:read');
  });

  it('answers 429 rate-limited with Retry-After past the limit, for that key only', async () => {
    const statuses: number[] = [];
    let limited: supertest.Response | undefined;
    for (let i = 0; i < 8; i++) {
      const res = await client(app, noisy).get('/v1/namespaces');
      statuses.push(res.status);
      if (res.status === 429) limited = res;
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect(Number(limited!.headers['retry-after'])).toBeGreaterThanOrEqual(3599);
    expect(limited!.headers['retry-after']).toMatch(/^[0-9]+$/);
    expect(limited!.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(limited!.body).toMatchObject({ type: 'rate-limited', status: 429 });
    expect((await client(app, quiet).get('/v1/namespaces')).status).toBe(200);
  });
});

describe('a limit of a second', () => {
  afterEach(() => vi.useRealTimers());

  it('opens a new window each second and tells the wait in whole seconds, at least 1', async () => {
    vi.useFakeTimers();
    const limits = createLimits({ perKey: 2 }, pino({ level: 'silent' }));
    const limit = limits.perKey!;
    expect([await limit.take('k'), await limit.take('k'), await limit.take('k')]).toEqual([0, 0, 1]);
    expect(await limit.take('other')).toBe(0);
    vi.advanceTimersByTime(999);
    expect(await limit.take('k')).toBe(1);
    vi.advanceTimersByTime(1);
    expect([await limit.take('k'), await limit.take('k'), await limit.take('k')]).toEqual([0, 0, 1]);
    await limits.close();
  });

  it('rounds waits up to whole seconds, and a window that never ends to 1', () => {
    expect([retryAfterSeconds(1), retryAfterSeconds(1000), retryAfterSeconds(1001), retryAfterSeconds(0), retryAfterSeconds(-1)]).toEqual([
      1, 1, 2, 1, 1,
    ]);
  });
});

describe('security headers', () => {
  const { services, app } = useApp();

  it('gives API answers, problems included, the headers of a REST API that must be neither rendered, framed nor cached', async () => {
    const tenant = await newTenant(services);
    const answers = [
      await client(app, tenant.adminKey).post('/v1/check', { subject: 'user:a', relation: 'viewer', object: 'nodoc:1' }),
      await supertest(app).post('/v1/check').send({}),
      await supertest(app).get('/healthz'),
    ];
    for (const res of answers) {
      expect(res.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['strict-transport-security']).toMatch(/^max-age=\d+/);
      expect(res.headers['cross-origin-resource-policy']).toBe('same-origin');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-dns-prefetch-control']).toBeUndefined();
    }
    expect(answers.map((res) => res.status)).toEqual([404, 401, 200]);
  });

  it("gives the reference pages helmet's document headers and their own policy", async () => {
    const res = await supertest(app).get('/docs/');
    expect(res.headers['cross-origin-opener-policy']).toBe('same-origin');
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['content-security-policy']).toMatch(/^default-src 'self'/);
    expect(res.headers['cache-control']).toBe('no-cache');
  });
});
