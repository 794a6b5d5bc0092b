import { randomBytes } from 'node:crypto';
import { createServer, type RequestListener } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import pino from 'pino';
import supertest from 'supertest';
import { afterAll, beforeAll, beforeEach, expect, inject } from 'vitest';
import type { KeyScope } from '../contract/index.ts';
import { loadConfig } from '../src/config.ts';
import { createApp } from '../src/http/app.ts';
import type { AppDeps } from '../src/http/context.ts';
import { createServices } from '../src/runtime.ts';
import { createKey } from '../src/store/keys.ts';
import { createTenant } from '../src/store/tenants.ts';

export const databaseUrl = (): string => inject('databaseUrl');

/** Services over this run's database, closed after the file's tests; `graphMemory` 0 answers every check from the database. */
export function useServices({
  graphMemory,
  poolSize = 5,
  authFailureLimit,
  authorizeLimit,
  registerLimit,
  rateLimit,
  rateLimitWindow,
  trustProxy,
}: {
  graphMemory?: number;
  poolSize?: number;
  authFailureLimit?: number;
  authorizeLimit?: number;
  registerLimit?: number;
  rateLimit?: number;
  rateLimitWindow?: number;
  trustProxy?: number;
} = {}): AppDeps {
  // As the environment would set them: a setting not given keeps the schema's default.
  const config = loadConfig({
    GRANTD_DB_POOL_SIZE: String(poolSize),
    GRANTD_GRAPH_MEMORY: graphMemory?.toString(),
    GRANTD_AUTH_FAILURE_LIMIT: authFailureLimit?.toString(),
    GRANTD_AUTHORIZE_LIMIT: authorizeLimit?.toString(),
    GRANTD_REGISTER_LIMIT: registerLimit?.toString(),
    GRANTD_RATE_LIMIT: rateLimit?.toString(),
    GRANTD_RATE_LIMIT_WINDOW: rateLimitWindow?.toString(),
    GRANTD_TRUST_PROXY: trustProxy?.toString(),
  });
  const services = createServices(databaseUrl(), config, pino({ level: 'silent' }));
  afterAll(async () => {
    await services.close();
  });
  return services;
}

export const uniqueName = (prefix: string): string => `${prefix}-${randomBytes(5).toString('hex')}`;

export interface TestTenant {
  id: string;
  adminKey: string;
  /** A key of this tenant with exactly the given scopes. */
  keyWith(...scopes: KeyScope[]): Promise<string>;
}

export async function newTenant(services: AppDeps): Promise<TestTenant> {
  const created = await createTenant(services.db, uniqueName('t'));
  return {
    id: created.tenant.id,
    adminKey: created.key.secret,
    keyWith: async (...scopes) => (await createKey(services.db, created.tenant.id, 'test', scopes)).secret,
  };
}

/** Everything a tenant owns (grants, namespaces, agents, keys), as one comparable value. */
export async function tenantSnapshot(services: AppDeps, tenantId: string): Promise<string> {
  const { db } = services;
  const where = { tenantId };
  const [grants, namespaces, agents, keys, oauthClients] = await Promise.all([
    db.grant.findMany({
      where,
      orderBy: [{ objectNs: 'asc' }, { objectId: 'asc' }, { relation: 'asc' }, { subjectNs: 'asc' }, { subjectId: 'asc' }],
    }),
    db.namespace.findMany({ where, orderBy: { name: 'asc' } }),
    db.agent.findMany({ where, orderBy: { externalId: 'asc' } }),
    db.apiKey.findMany({ where, orderBy: { id: 'asc' }, select: { id: true, revokedAt: true, scopes: true } }),
    db.oAuthClient.findMany({ where, orderBy: { clientId: 'asc' } }),
  ]);
  return JSON.stringify({ grants, namespaces, agents, keys, oauthClients });
}

/** A supertest agent on the app whose every request carries the given key (read at each request when a function). */
export function client(app: ReturnType<typeof createApp>, key: string | (() => string)) {
  const auth = (test: supertest.Test) => test.set('Authorization', `Bearer ${typeof key === 'string' ? key : key()}`);
  const request = supertest(app);
  return {
    get: (path: string) => auth(request.get(path)),
    post: (path: string, body?: object) => auth(request.post(path)).send(body),
    put: (path: string, body?: object) => auth(request.put(path)).send(body),
    delete: (path: string, body?: object) => (body === undefined ? auth(request.delete(path)) : auth(request.delete(path)).send(body)),
  };
}

export function useApp(options: Parameters<typeof useServices>[0] = {}) {
  const services = useServices(options);
  const app = createApp(services);
  return { services, app };
}

/**
 * The app, and a tenant of the file's own made before its tests (before each test with `each`, so that
 * any test runs alone); `api` carries the admin key of the tenant of the moment.
 */
export function useTenant({ each = false, ...options }: Parameters<typeof useServices>[0] & { each?: boolean } = {}) {
  const { services, app } = useApp(options);
  const tenant = {} as TestTenant;
  (each ? beforeEach : beforeAll)(async () => {
    Object.assign(tenant, await newTenant(services));
  });
  return { services, app, tenant, api: client(app, () => tenant.adminKey) };
}

/** A handler (an Express app, say) on a real socket of 127.0.0.1, on a free port; `close` ends its connections too. */
export async function listen(handler: RequestListener): Promise<{ baseUrl: string; close: () => Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** Raw HTTP over a socket of 127.0.0.1, for what clients such as supertest cannot send (slow or partial requests). */
export interface Exchange {
  socket: Socket;
  /** Everything the server sent, once it closed the connection, and how long after the first bytes were sent. */
  closed: Promise<{ answer: string; afterMs: number }>;
}

/** Connects and sends `bytes`, leaving the connection open for the server to answer or close. */
export function exchange(port: number, bytes: string): Exchange {
  const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
  const started = performance.now();
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (answer += chunk));
  socket.on('error', () => undefined); // a reset is a close too
  const closed = new Promise<{ answer: string; afterMs: number }>((resolve) =>
    socket.on('close', () => resolve({ answer, afterMs: performance.now() - started })),
  );
  return { socket, closed };
}

export const headerOf = (answer: string, name: string) => new RegExp(`\\r\\n${name}: ([^\\r]*)\\r\\n`, 'i').exec(answer)?.[1];

export { DOCUMENT_NAMESPACE_EXAMPLE as DOCUMENT_NAMESPACE } from '../contract/examples.ts';

/**
 * Resolves once `count` backends of this database wait for a lock `holder` holds, directly or queued
 * behind another such waiter: a forced interleaving, seen in pg_stat_activity.
 */
export async function untilBlockedBy(holder: pg.Client, count: number): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl() });
  await admin.connect();
  try {
    const { pid } = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!;
    const blocked = async () =>
      (
        await admin.query<{ n: number }>(
          `WITH RECURSIVE blocked(pid) AS (
             SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))
             UNION
             SELECT a.pid FROM pg_stat_activity a JOIN blocked b ON b.pid = ANY(pg_blocking_pids(a.pid))
           ) SELECT count(*)::int AS n FROM blocked`,
          [pid],
        )
      ).rows[0]!.n;
    await expect.poll(blocked, { timeout: 10_000, interval: 20 }).toBe(count);
  } finally {
    await admin.end();
  }
}
