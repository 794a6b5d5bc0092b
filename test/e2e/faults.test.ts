import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort, loadEmbeddedPostgres } from '../../src/store/embedded.ts';
import { callGrantd, printedKey, startServer, type RunningServer } from './serve.ts';

/**
 * Database faults on a PostgreSQL the test owns (stopping it disturbs nothing else): it runs
 * once, in the embedded project, since it brings its own database.
 */
describe.runIf(inject('databaseKind') === 'embedded')('database faults', () => {
  let dir: string;
  let database: InstanceType<Awaited<ReturnType<typeof loadEmbeddedPostgres>>>;
  let url: string;
  let server: RunningServer;
  let key: string;

  const call = async (method: string, path: string, body?: unknown) => {
    const answer = await callGrantd(server.baseUrl, key, method, path, body);
    return { ...answer, retryAfter: answer.headers['retry-after'] ?? null };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'grantd-faults-'));
    chmodSync(dir, 0o711);
    const port = await freePort();
    const EmbeddedPostgres = await loadEmbeddedPostgres();
    database = new EmbeddedPostgres({
      databaseDir: join(dir, 'pg'),
      port,
      user: 'postgres',
      password: 'faults',
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      onLog: () => undefined,
      onError: () => undefined,
    });
    await database.initialise();
    await database.start();
    url = `postgres://postgres:faults@127.0.0.1:${port}/postgres`;
    server = await startServer({ DATABASE_URL: url, GRANTD_DB_POOL_SIZE: '4' });
    key = printedKey(server.output())!;
    expect((await call('POST', '/v1/namespaces', { name: 'doc' })).status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await server?.stop('SIGKILL');
    await database?.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 fast while the database is down, recovers by itself, and loses no acknowledged write', async () => {
    const acknowledged: string[] = [];
    const refused: { status: number; ms: number; type?: string; retryAfter: string | null }[] = [];
    let stop = false;
    const writer = async (worker: number) => {
      for (let i = 0; !stop; i++) {
        const object = `doc:w${worker}-${i}`;
        const res = await call('POST', '/v1/grants', { subject: 'user:alice', relation: 'viewer', object });
        if (res.status === 201) acknowledged.push(object);
        else {
          refused.push({ status: res.status, ms: res.ms, type: res.body?.type, retryAfter: res.retryAfter });
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    };
    const writers = [0, 1, 2].map(writer);
    await expect.poll(() => acknowledged.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(30);

    await database.stop();
    await expect.poll(async () => (await call('GET', '/readyz')).status, { timeout: 30_000, interval: 100 }).toBe(503);
    expect((await call('GET', '/readyz')).body.type).toBe('unavailable');
    const during = await call('POST', '/v1/check', { subject: 'user:alice', relation: 'viewer', object: 'doc:w0-0' });
    expect(during.status).toBe(503);
    expect(during.retryAfter).toMatch(/^\d+$/);
    expect(during.ms).toBeLessThan(5_000);

    await database.start();
    await expect.poll(async () => (await call('GET', '/readyz')).status, { timeout: 15_000, interval: 200 }).toBe(200);
    const afterRecovery = acknowledged.length;
    await expect.poll(() => acknowledged.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(afterRecovery + 10);
    stop = true;
    await Promise.all(writers);

    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r).toMatchObject({ status: 503, type: 'unavailable' });
      expect(r.retryAfter).toMatch(/^\d+$/);
      expect(r.ms).toBeLessThan(5_000);
    }
    const listed = await call('GET', '/v1/grants?subject=user:alice&limit=1000');
    const stored = new Set(listed.body.grants.map((g: { object: string }) => g.object));
    expect(acknowledged.filter((o) => !stored.has(o))).toEqual([]);
  }, 90_000);

  it('survives its connections being terminated', async () => {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    for (let round = 0; round < 3; round++) {
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = 'postgres' AND backend_type = 'client backend'`,
      );
      const results = await Promise.all(
        Array.from({ length: 10 }, () => call('POST', '/v1/check', { subject: 'user:alice', relation: 'viewer', object: 'doc:w0-0' })),
      );
      for (const r of results) expect([200, 503]).toContain(r.status);
    }
    await admin.end();
    const res = await call('POST', '/v1/check', { subject: 'user:alice', relation: 'viewer', object: 'doc:w0-0' });
    expect(res).toMatchObject({ status: 200, body: { allowed: true } });
  }, 60_000);

  it('applies each batch whole or not at all when the server is killed in the middle', async () => {
    const batches = Array.from({ length: 12 }, (_, b) =>
      Array.from({ length: 1000 }, (_, i) => ({ subject: `user:b${b}`, relation: 'viewer', object: `doc:batch${b}-${i}` })),
    );
    const inFlight = batches.map((writes) => call('POST', '/v1/grants/batch', { writes }).catch(() => null));
    // Kill as soon as the first batch is acknowledged: the others are still being written.
    await Promise.race(inFlight);
    await server.stop('SIGKILL');
    const outcomes = await Promise.all(inFlight);

    server = await startServer({ DATABASE_URL: url, GRANTD_DB_POOL_SIZE: '4' });
    const counts: number[] = [];
    for (let b = 0; b < batches.length; b++) counts.push((await call('GET', `/v1/grants?subject=user:b${b}&limit=1000`)).body.grants.length);
    // Every acknowledged batch is there whole.
    const acknowledged = outcomes.map((outcome) => outcome?.status === 200);
    expect(counts.filter((_, b) => acknowledged[b])).toEqual(acknowledged.filter(Boolean).map(() => 1000));
    for (const count of counts) expect([0, 1000]).toContain(count);
    expect(counts).toContain(1000);
    expect(outcomes.filter((o) => o?.status === 200).length).toBeLessThan(batches.length);
  }, 90_000);
});
