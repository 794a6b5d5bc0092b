import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';
import { launchChromium } from '../console/chromium.ts';
import { exchange, headerOf } from '../helpers.ts';
import { callGrantd, GRANTD_BIN, printedKey, runGrantd, startServer, type RunningServer } from './serve.ts';

const run = promisify(execFile);

/** The README's walk-through, over a real socket. */
async function walkThrough(baseUrl: string, key: string) {
  const call = (method: string, path: string, body?: unknown) => callGrantd(baseUrl, key, method, path, body);
  expect((await call('POST', '/v1/namespaces', { name: 'folder', relations: { viewer: {} } })).status).toBe(201);
  const documentRelations = { parent: {}, owner: {}, editor: { includes: ['owner'] }, viewer: { includes: ['editor', 'parent->viewer'] } };
  expect((await call('POST', '/v1/namespaces', { name: 'document', relations: documentRelations })).status).toBe(201);
  expect((await call('POST', '/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'document:q3' })).status).toBe(201);
  expect((await call('POST', '/v1/grants', { subject: 'folder:reports', relation: 'parent', object: 'document:q4' })).status).toBe(201);
  expect((await call('POST', '/v1/grants', { subject: 'user:alice', relation: 'viewer', object: 'folder:reports' })).status).toBe(201);
  const lines = [
    { subject: 'user:carol', relation: 'viewer', object: 'document:q3' },
    { subject: 'user:dave', relation: 'viewer', object: 'folder:reports' },
  ].map((grant) => JSON.stringify(grant));
  const imported = await runGrantd(['import'], { GRANTD_KEY: key, GRANTD_URL: baseUrl }, lines.join('\n') + '\n');
  expect(imported.code).toBe(0);
  expect(imported.stdout).toMatch(/^imported 2 grants from standard input: 2 new, 0 already present/);
  const check = (subject: string, object: string) => call('POST', '/v1/check', { subject, relation: 'viewer', object });
  expect((await check('user:alice', 'document:q3')).body).toEqual({ allowed: true });
  expect((await check('user:alice', 'document:q4')).body).toEqual({ allowed: true });
  expect((await check('user:bob', 'document:q3')).body).toEqual({ allowed: false });
  expect((await check('user:dave', 'document:q4')).body).toEqual({ allowed: true });
  const first = await call('GET', '/v1/objects?namespace=document&subject=user:alice&relation=viewer&limit=1');
  expect(first.body).toEqual({ namespace: 'document', objects: ['q3'], next_cursor: expect.any(String) });
  const second = await call(
    'GET',
    `/v1/objects?namespace=document&subject=user:alice&relation=viewer&limit=1&cursor=${encodeURIComponent(first.body.next_cursor)}`,
  );
  expect(second.body).toEqual({ namespace: 'document', objects: ['q4'], next_cursor: null });
  const problem = await check('alice', 'document:q3');
  expect(problem.status).toBe(400);
  expect(problem.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(problem.body.type).toBe('invalid-subject');
}

describe('grantd serve on its embedded default database', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'grantd-e2e-'));
    chmodSync(dir, 0o711);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('bootstraps tenant default, prints its key once, runs the walk-through, and keeps data across restarts', async () => {
    const env = { GRANTD_DATA_DIR: join(dir, 'data') };
    const first = await startServer(env);
    try {
      const key = printedKey(first.output());
      expect(key).toMatch(/^svc_live_/);
      await walkThrough(first.baseUrl, key!);

      // tenant create talks to the same embedded database while the server runs.
      const { stdout } = await run(process.execPath, [GRANTD_BIN, 'tenant', 'create', 'acme', '--json'], {
        env: { ...process.env, ...env, DATABASE_URL: '' },
      });
      const created = JSON.parse(stdout);
      expect(created).toEqual({
        tenant: { id: expect.any(String), name: 'acme' },
        key: {
          id: expect.stringMatching(/^key_/),
          prefix: expect.any(String),
          secret: expect.stringMatching(/^svc_live_/),
          label: expect.any(String),
          scopes: ['admin'],
          created_at: expect.any(String),
        },
      });
      const namespaces = await fetch(`${first.baseUrl}/v1/namespaces`, { headers: { Authorization: `Bearer ${created.key.secret}` } });
      expect((await namespaces.json()).namespaces.map((n: { name: string }) => n.name)).toEqual(['agent', 'user']);
    } finally {
      expect(await first.stop()).toBe(0);
    }
    expect(first.output()).toMatch(/"msg":"stopped"/);
    // Initialising the embedded database, and the connections its stop ends, are not warnings.
    const warnings = first
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((line) => line.level >= 40 && line.msg.includes('embedded'));
    expect(warnings.map((line) => line.msg)).toEqual([]);

    const second = await startServer(env);
    try {
      expect(printedKey(second.output())).toBeUndefined();
      const res = await fetch(`${second.baseUrl}/v1/namespaces`, { headers: { Authorization: `Bearer ${printedKey(first.output())}` } });
      expect((await res.json()).namespaces.map((n: { name: string }) => n.name)).toContain('document');
    } finally {
      await second.stop();
    }
  }, 120_000);
});

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('grantd serve on DATABASE_URL', () => {
  let server: RunningServer;
  let key: string;
  let port: number;
  const database = `grantd_e2e_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const baseUrl = inject('databaseUrl');

  beforeAll(async () => {
    // A database of its own, so that the bootstrap of tenant default can be observed.
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    const url = new URL(baseUrl);
    url.pathname = `/${database}`;
    // A port known before the start: the console's client, made at the first start, returns to it.
    port = await freePort();
    server = await startServer({ DATABASE_URL: url.toString(), PORT: String(port) });
    key = printedKey(server.output())!;
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  it('runs the README walk-through', async () => {
    expect(key).toMatch(/^svc_live_/);
    await walkThrough(server.baseUrl, key);
  });

  it('runs the README client example as it is', async () => {
    const example = join(packageRoot(), 'examples', 'client-quickstart.mjs');
    const { stdout } = await run(process.execPath, [example], { env: { ...process.env, GRANTD_KEY: key, GRANTD_URL: server.baseUrl } });
    expect(stdout).toBe('alice may view a: true\nalice views: a, b, c\nproblem: 404 namespace-not-found\n');
    // It leaves no namespace (nor grant) of its own behind in the tenant.
    const listed = await fetch(`${server.baseUrl}/v1/namespaces`, { headers: { authorization: `Bearer ${key}` } });
    expect(((await listed.json()) as { namespaces: { name: string }[] }).namespaces.map((ns) => ns.name)).not.toContainEqual(
      expect.stringMatching(/^quickstart_/),
    );
  });

  it('names the console on its start-up line, where tenant default signs in from the first start with no other step', async () => {
    const ready = server
      .output()
      .split('\n')
      .find((line) => line.startsWith('grantd is ready: '));
    expect(ready).toMatch(new RegExp(`^grantd is ready: the API at ${server.baseUrl}/v1, its reference at ${server.baseUrl}/docs, the console at `));
    const consoleUrl = /the console at (\S+)$/.exec(ready!)![1]!;
    expect(consoleUrl).toMatch(new RegExp(`^http://localhost:${port}/console/\\?client_id=oc_\\w+$`));
    const userDataDir = mkdtempSync(join(tmpdir(), 'grantd-e2e-chromium-'));
    const context = await launchChromium(userDataDir);
    try {
      const page = await context.newPage();
      await page.goto(consoleUrl);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/v1\/oauth\/consent\//);
      await page.fill('#api_key', key);
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      expect(await page.getByRole('banner').textContent()).toContain('Tenant default');
    } finally {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    }
  });

  it('never writes the key secret into its log lines', () => {
    const logLines = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'));
    expect(logLines.length).toBeGreaterThan(5);
    expect(logLines.join('\n')).not.toContain('svc_live_');
  });

  it('serves the operator endpoints', async () => {
    expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);
    const doc = await (await fetch(`${server.baseUrl}/openapi.json`)).json();
    expect(Object.keys(doc.paths)).toContain('/v1/check');
  });

  it('stops cleanly on SIGTERM', async () => {
    expect(await server.stop('SIGTERM')).toBe(0);
  });
});

describe('grantd serve with short timeouts and a metrics token', () => {
  const token = 'e2e-metrics-token-0123456789';
  const slowBody = (port: number, key: string) =>
    exchange(
      port,
      `POST /v1/check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 80\r\n\r\n{"sub`,
    ).closed;

  // The workers whose log lines name the cut requests: a single process's lines name no worker.
  it.each([
    { workers: '1', loggedBy: [undefined] },
    { workers: '2', loggedBy: [1, 2] },
  ])(
    'with GRANTD_WORKERS=$workers, cuts late bodies and headers with 400 invalid-request and guards /metrics',
    async ({ workers, loggedBy }) => {
      const databaseUrl = inject('databaseUrl');
      const created = await runGrantd(['tenant', 'create', `slow-${workers}-${Date.now()}`, '--json'], { DATABASE_URL: databaseUrl });
      const key: string = JSON.parse(created.stdout).key.secret;
      const server = await startServer({
        DATABASE_URL: databaseUrl,
        GRANTD_WORKERS: workers,
        GRANTD_HEADERS_TIMEOUT: '1',
        GRANTD_BODY_TIMEOUT: '1',
        GRANTD_KEEP_ALIVE_TIMEOUT: '1',
        GRANTD_METRICS_TOKEN: token,
      });
      try {
        const port = Number(new URL(server.baseUrl).port);
        // Each worker has authenticated once first: its first authentication (a database connection
        // opened, the key read) could otherwise take most of the body's second on a loaded machine.
        const warmUps = [0, 1, 2, 3].map(() => fetch(`${server.baseUrl}/v1/namespaces`, { headers: { Authorization: `Bearer ${key}` } }));
        for (const warmUp of await Promise.all(warmUps)) expect(warmUp.status).toBe(200);
        // Four at once: the workers take connections in turn, so each of two gets some.
        const answers = await Promise.all([0, 1, 2, 3].map(() => slowBody(port, key)));
        for (const { answer } of answers) {
          expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
          expect(headerOf(answer, 'Connection')).toBe('close');
          expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
            type: 'invalid-request',
            detail: 'the body did not arrive within 1 s',
          });
        }
        const lateHeaders = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n').closed;
        expect(lateHeaders.answer).toMatch(
          /^HTTP\/1\.1 400 Bad Request\r\n[^]*"detail":"the request did not arrive in time: its headers within 1 s, its body within 1 s more"/,
        );

        const cutBy = server
          .output()
          .split('\n')
          .filter((line) => line.includes('"path":"/v1/check","status":400'))
          .map((line) => JSON.parse(line).worker);
        expect(cutBy).toHaveLength(4);
        expect(new Set(cutBy)).toEqual(new Set(loggedBy));

        expect((await fetch(`${server.baseUrl}/metrics`)).status).toBe(401);
        const metrics = await fetch(`${server.baseUrl}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
        expect(metrics.status).toBe(200);
        expect(await metrics.text()).toMatch(/grantd_http_requests_total\{route="\/v1\/check",method="POST",status="400"\} 4/);
      } finally {
        await server.stop();
      }
      expect(server.output()).not.toContain(token);
    },
    90_000,
  );
});

describe('grantd configuration', () => {
  it('refuses bad environment values with one line each', async () => {
    const failure = await runGrantd(['serve'], {
      PORT: 'eighty',
      GRANTD_RATE_LIMIT: '-1',
      GRANTD_GRAPH_MEMORY: '5e6',
      GRANTD_WORKERS: '0',
      GRANTD_METRICS_TOKEN: 'tiny-secret',
      GRANTD_HEADERS_TIMEOUT: '0',
      GRANTD_BODY_TIMEOUT: '1.5',
      GRANTD_KEEP_ALIVE_TIMEOUT: '5s',
      GRANTD_MAX_CONNECTIONS: '0',
    });
    expect(failure.code).toBe(1);
    expect(failure.stderr).toMatch(/PORT: PORT must be a port number/);
    expect(failure.stderr).toMatch(/GRANTD_RATE_LIMIT: GRANTD_RATE_LIMIT must be a positive integer/);
    expect(failure.stderr).toMatch(/GRANTD_GRAPH_MEMORY: GRANTD_GRAPH_MEMORY must be a whole number, 0 or more/);
    expect(failure.stderr).toMatch(/GRANTD_WORKERS: GRANTD_WORKERS must be auto or a number of processes from 1 to 999/);
    expect(failure.stderr).toMatch(/GRANTD_METRICS_TOKEN: GRANTD_METRICS_TOKEN must be 16 to 1024 visible ASCII characters/);
    expect(failure.stderr).not.toContain('tiny-secret');
    for (const name of ['GRANTD_HEADERS_TIMEOUT', 'GRANTD_BODY_TIMEOUT', 'GRANTD_KEEP_ALIVE_TIMEOUT']) {
      expect(failure.stderr).toContain(`${name}: ${name} must be a whole number of seconds from 1 to 99999`);
    }
    expect(failure.stderr).toMatch(/GRANTD_MAX_CONNECTIONS: GRANTD_MAX_CONNECTIONS must be a positive integer/);
  });
});

describe('grantd serve on a port in use', () => {
  it.each(['1', '2'])('exits 1 saying it cannot listen, with GRANTD_WORKERS=%s', async (workers) => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const env = { DATABASE_URL: inject('databaseUrl'), HOST: '127.0.0.1', PORT: String(port), GRANTD_WORKERS: workers, LOG_LEVEL: 'info' };
      const serving = await runGrantd(['serve'], env);
      expect(serving.code).toBe(1);
      expect(serving.stderr).toContain(`grantd: cannot listen on 127.0.0.1:${port}: EADDRINUSE`);
      expect(serving.stdout + serving.stderr).not.toContain('grantd listening');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
