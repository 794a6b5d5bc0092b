import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent as HttpAgent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MODEL_LIMITS } from '../../contract/namespaces.ts';
import type { GrantWindow } from '../../src/engine/grant-window.ts';
import { CompiledSchema, type RelationDefinitions } from '../../src/engine/schema.ts';
import { createApp } from '../../src/http/app.ts';
import { DEFAULT_HTTP_OPTIONS } from '../../src/http/options.ts';
import { applyBatch, type GrantWrite } from '../../src/store/grants.ts';
import { DOCUMENT_NAMESPACE, newTenant, useServices, type TestTenant } from '../helpers.ts';
import { basic } from '../oauth/support.ts';
import { everyContractRoute } from './routes.ts';
import { PUBLIC_TEAMS, publicTenant, RULED_CHAIN_WIDTH, rulesTenant, type StallTenant } from './stall-rules.ts';

/**
 * The stall test (docs/decisions.md#one-meter-for-all-work-in-memory): adversarial tenants held in
 * memory, every route of the contract and the window clock driven against them, while the event
 * loop's delay (the largest single stall) and a quiet tenant's check latency are measured on the
 * same node. The app runs in this process on a real socket, so that the loop measured is the
 * server's; the test's own client work in it is small (no answer of more than a few hundred KB).
 *
 * The window clock is Date's, which the test sets (vi.setSystemTime) and moves through the hot
 * object's expiries in the last phase; it stands still otherwise, so that what is held stays
 * current until this node writes.
 */

/**
 * The bounds. The target (docs/decisions.md#one-meter-for-all-work-in-memory): no single stall over
 * 50 ms, the quiet tenant's p99 within 3x its own; `npm run test:stall` runs this file alone and
 * holds it to them. Inside the whole suite, beside the other files on the same two cores, what is
 * measured is mostly the machine: there it guards against the class of fault the audit found
 * (stalls of seconds, a quiet p99 of seconds) with bounds that noise does not reach.
 */
const TARGET = process.env.GRANTD_STALL_TARGET === '1';
/** The largest single stall of the event loop a route may cause. */
const MAX_STALL_MS = TARGET ? 50 : 250;
/** The quiet tenant's p99 under attack may be at most this many times its p99 alone... */
const MAX_SLOWDOWN = TARGET ? 3 : 10;
/**
 * ...its p99 alone taken as at least this. Alone, a check in this process takes about a millisecond;
 * on a busy 2-core machine (other test files, PostgreSQL on the same cores) its p99 varies between
 * runs by a few milliseconds that have nothing to do with the attack, and three times a 1 ms p99
 * would fail on noise. Under attack the quiet check legitimately waits for the slices and request
 * handling already on the loop (a slice is 2 ms, plus one unit of work), so a floor of a few
 * milliseconds keeps the bound about stalls of the engine, which are tens to thousands of ms.
 */
const QUIET_P99_FLOOR_MS = TARGET ? 5 : 25;
/** The quiet tenant sends a check this often (open loop: latency counts from when it was due). */
const QUIET_PERIOD_MS = 10;
/** Quiet checks sent before anything is measured (connections, compilation), then measured alone before and after the attack. */
const QUIET_WARM_UP = 100;
const QUIET_ALONE_SAMPLES = 300;
/** The event loop's delay is sampled this often (monitorEventLoopDelay's resolution). */
const LOOP_RESOLUTION_MS = 10;
/** A request not answered in this long counts as a stall of its own (status 0 in the report). */
const REQUEST_TIMEOUT_MS = 30_000;

/** The adversarial shapes: a user in WIDE groups; objects with FAN parents; chains DEEP arrows long; HOT windowed grants on one object; PENDING grants not yet in force. */
const WIDE = 8_000;
const FAN = 8_000;
const DEEP = 16;
/** Objects per level of the wide chain: every object of a level is the parent of every one of the level below. */
const CHAIN_WIDTH = 20;
const HOT = 5_000;
/** Apart, the hot grants' expiries (issue 40 finding 2: 5 ms). */
const HOT_EXPIRY_STEP_MS = 5;
const PENDING = 30_000;
/** Grants of the agent the killswitch ends (replayed in one catch-up). */
const AGENT_GRANTS = 3_000;
/** Steps of the window clock, each moving it WINDOW_STEP_MS through the hot expiries. */
const WINDOW_STEPS = 12;
const WINDOW_STEP_MS = 100;

// The attack on GET /v1/oauth/authorize drives it faster than its limit per client (10 a second): the limit is not what is measured here.
const services = useServices({ authorizeLimit: 1_000_000 });
/** Requests go to this process's app over a real socket. */
let baseUrl = '';
/** Date's instant at the start (a whole second ahead of the real clock, so that the database's now() stays behind it). */
let T = 0;
/** The first hot expiry: an hour on, past every token and cache lifetime the attack relies on. */
let HOT_START = 0;
const server = createServer();

interface Tenants {
  quiet: TestTenant;
  /** Wide groups, fan-out arrows, deep chains, definitions at the limits, an agent with many grants. */
  graph: TestTenant;
  /** Tens of thousands of grants not yet in force. */
  pending: TestTenant;
  /** One object with thousands of windowed grants. */
  hot: TestTenant;
  /** Relations with requires and excludes over fan-outs and chains (stall-rules.ts). */
  rules: TestTenant;
  /** A wildcard subject in thousands of groups (stall-rules.ts). */
  public: TestTenant;
}
const t = {} as Tenants;
const oauth = {} as { confidential: { client_id: string; client_secret: string }; publicId: string };

beforeAll(async () => {
  T = Math.ceil(Date.now() / 1000) * 1000 + 5_000;
  HOT_START = T + 3_600_000;
  vi.useFakeTimers({ toFake: ['Date'], now: T });
  // As `grantd serve` does before it listens: the OAuth library is compiled at start-up, not by a request.
  await import('../../src/auth/oauth/provider.ts');
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  baseUrl = `http://127.0.0.1:${port}`;
  // Idle connections kept past any stall: a connection the server closes as the client reuses it is reset, which is no stall of ours.
  server.keepAliveTimeout = 120_000;
  server.on('request', createApp(services, { ...DEFAULT_HTTP_OPTIONS, publicUrl: `http://localhost:${port}` }));
  [t.quiet, t.graph, t.pending, t.hot, t.rules, t.public] = await Promise.all([
    newTenant(services),
    newTenant(services),
    newTenant(services),
    newTenant(services),
    newTenant(services),
    newTenant(services),
  ]);
  await Promise.all([
    quietTenant(),
    graphTenant(),
    pendingTenant(),
    hotTenant(),
    stallTenant(t.rules, rulesTenant()),
    stallTenant(t.public, publicTenant()),
  ]);
  // The quiet tenant is held before anything is measured; the others are loaded while measured.
  expect(await services.heldTenants.load(t.quiet.id)).toBe(true);
}, 300_000);

afterAll(async () => {
  vi.useRealTimers();
  connections.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

// ---------------------------------------------------------------------------------------------
// The tenants

const ref = (s: string) => {
  const [ns, id] = s.split(':') as [string, string];
  return { ns, id };
};
const write = (subject: string, relation: string, object: string, window: GrantWindow | null = null): GrantWrite => ({
  subject: ref(subject),
  relation,
  object: ref(object),
  window,
});

/** Writes the grants straight to the store, in statements of 10,000 (the API's batches are 1,000: far slower to set up). */
async function grant(tenant: TestTenant, writes: GrantWrite[]): Promise<void> {
  for (let i = 0; i < writes.length; i += 10_000) await applyBatch(services.db, tenant.id, writes.slice(i, i + 10_000), []);
  services.engine.invalidate(tenant.id);
}

async function namespace(tenant: TestTenant, name: string, relations: RelationDefinitions | null = null): Promise<void> {
  const res = await call(tenant.adminKey, { method: 'POST', path: '/v1/namespaces', json: relations ? { name, relations } : { name } });
  expect(res.status, res.text).toBe(201);
}

async function quietTenant(): Promise<void> {
  await namespace(t.quiet, DOCUMENT_NAMESPACE.name, DOCUMENT_NAMESPACE.relations);
  await grant(t.quiet, [write('user:q', 'viewer', 'document:q1'), write('user:q', 'owner', 'document:q2')]);
}

/**
 * A namespace at the model's limits: `parent` and RELATIONS-1 relations, each including the next 15
 * and `parent->` itself (16 includes), so that its closure is every later relation: 2,080 rows at 64
 * relations. `shift` gives another definition of the same size (an update that recompiles).
 */
function denseModel(relations: number, shift = 0): RelationDefinitions {
  const defs: RelationDefinitions = { parent: {} };
  for (let i = 0; i < relations - 1; i++) {
    const next = Array.from({ length: 15 - shift }, (_, k) => i + 1 + k + shift).filter((j) => j < relations - 1);
    defs[`r${i}`] = { includes: [...next.map((j) => `r${j}`), `parent->r${i}`] };
  }
  return defs;
}
/** The four namespaces at 64 relations and a fifth that brings the tenant as near its 10,000 rows as it goes. */
function modelAtLimits(): { name: string; relations: RelationDefinitions }[] {
  const small = [{ name: 'n2', relations: N2 }, { name: 'chain', relations: CHAIN }, { name: 'group' }, { name: 'agent' }, { name: 'user' }];
  const model = [0, 1, 2, 3].map((i) => ({ name: `big${i}`, relations: denseModel(MODEL_LIMITS.relationsPerNamespace) }));
  const rowsWith = (extra: number) =>
    new CompiledSchema(
      [...small, ...model, { name: 'big4', relations: denseModel(extra) }].map((ns) => ({ name: ns.name, relations: ns.relations ?? null })),
    ).rows;
  let last = 2;
  while (last < MODEL_LIMITS.relationsPerNamespace && rowsWith(last + 1) <= MODEL_LIMITS.compiledRowsPerTenant) last++;
  return [...model, { name: 'big4', relations: denseModel(last) }];
}
/** The fan-out: r1 on an object is held through r1 on each of its parents. */
const N2: RelationDefinitions = { parent: {}, r1: { includes: ['parent->r1'] } };
const CHAIN: RelationDefinitions = { parent: {}, r: { includes: ['parent->r'] } };

async function graphTenant(): Promise<void> {
  await namespace(t.graph, 'group');
  await namespace(t.graph, 'n2', N2);
  await namespace(t.graph, 'chain', CHAIN);
  for (const { name, relations } of modelAtLimits()) await namespace(t.graph, name, relations);
  for (let i = 0; i < 8; i++) await namespace(t.graph, `spare${i}`);
  const agent = await call(t.graph.adminKey, { method: 'POST', path: '/v1/agents', json: { external_id: 'bot', scope: ['*:*'] } });
  expect(agent.status, agent.text).toBe(201);
  const writes: GrantWrite[] = [];
  for (let i = 0; i < WIDE; i++) writes.push(write('user:wide', 'member', `group:g${i}`));
  // Other members of some groups: listing a pair's holders reads them.
  for (let i = 0; i < 2_000; i++) for (let m = 0; m < 5; m++) writes.push(write(`user:m${m}_${i}`, 'member', `group:g${i}`));
  // n2:fan: FAN parents, each's r1 held by one of the wide user's groups; n2:fanx: FAN parents held by groups not its.
  for (let i = 0; i < FAN; i++) {
    writes.push(write(`n2:p${i}`, 'parent', 'n2:fan'), write(`group:g${i % WIDE}`, 'r1', `n2:p${i}`));
    writes.push(write(`n2:x${i}`, 'parent', 'n2:fanx'), write(`group:h${i}`, 'r1', `n2:x${i}`));
  }
  // chain:l0_* <- ... <- chain:l16_*: every object of a level the parent of each of the level below, DEEP arrows.
  for (let level = 0; level < DEEP; level++) {
    for (let a = 0; a < CHAIN_WIDTH; a++)
      for (let b = 0; b < CHAIN_WIDTH; b++) writes.push(write(`chain:l${level + 1}_${a}`, 'parent', `chain:l${level}_${b}`));
  }
  writes.push(write('user:deep', 'r', `chain:l${DEEP}_0`));
  // big0:c0 <- ... <- big0:c16, its far end held through the last of 63 relations.
  for (let level = 0; level < DEEP; level++) writes.push(write(`big0:c${level + 1}`, 'parent', `big0:c${level}`));
  writes.push(write('user:deep', 'r62', `big0:c${DEEP}`));
  for (let i = 0; i < AGENT_GRANTS; i++) writes.push(write('agent:bot', 'member', `group:g${i}`));
  await grant(t.graph, writes);
}

async function pendingTenant(): Promise<void> {
  await namespace(t.pending, DOCUMENT_NAMESPACE.name, DOCUMENT_NAMESPACE.relations);
  const later: GrantWindow = { notBefore: T + 86_400_000, expiresAt: null };
  const writes = [write('user:p', 'viewer', 'document:now')];
  for (let i = 0; i < PENDING; i++) writes.push(write(`user:u${i}`, 'viewer', `document:d${i}`, later));
  await grant(t.pending, writes);
}

async function hotTenant(): Promise<void> {
  await namespace(t.hot, DOCUMENT_NAMESPACE.name, DOCUMENT_NAMESPACE.relations);
  const writes = [write('user:always', 'viewer', 'document:hot')];
  for (let i = 0; i < HOT; i++) writes.push(write(`user:s${i}`, 'viewer', 'document:hot', hotWindow(i)));
  await grant(t.hot, writes);
}
/** A tenant of stall-rules.ts: its namespaces, then its grants. */
async function stallTenant(tenant: TestTenant, { namespaces, grants }: StallTenant): Promise<void> {
  for (const { name, relations } of namespaces) await namespace(tenant, name, relations);
  await grant(
    tenant,
    grants.map(([subject, relation, object]) => write(subject, relation, object)),
  );
}

const hotWindow = (i: number): GrantWindow => ({ notBefore: null, expiresAt: HOT_START + i * HOT_EXPIRY_STEP_MS });
const iso = (ms: number) => new Date(ms).toISOString();

// ---------------------------------------------------------------------------------------------
// Requests

interface Request {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  json?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

/**
 * The test's client: node:http on keep-alive connections, not fetch. The client runs in the server's
 * process, so its garbage is collected in the pauses this test measures; fetch's web streams and
 * per-request objects made the scavenges of a phase several times longer than the server's own
 * allocations do (docs/measurements.md, "session 28: the stall test's own client").
 */
const connections = new HttpAgent({ keepAlive: true });

/** One request with the key (none: null); status 0 when no answer came within REQUEST_TIMEOUT_MS. */
function call(key: string | null, request: Request): Promise<{ status: number; text: string; headers: Headers }> {
  const headers: Record<string, string> = { ...request.headers };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (request.json !== undefined) [headers['content-type'], body] = ['application/json', JSON.stringify(request.json)];
  if (request.form !== undefined)
    [headers['content-type'], body] = ['application/x-www-form-urlencoded', new URLSearchParams(request.form).toString()];
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise((resolve, reject) => {
    const sent = httpRequest(`${baseUrl}${request.path}`, { method: request.method, headers, agent: connections }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const answered = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2) answered.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString('utf8'), headers: answered });
      });
    });
    sent.setTimeout(REQUEST_TIMEOUT_MS, () => {
      sent.destroy();
      resolve({ status: 0, text: '', headers: new Headers() });
    });
    // After the timeout's destroy this rejects a promise already settled: a no-op.
    sent.on('error', reject);
    sent.end(body);
  });
}

const check = (subject: string, relation: string, object: string): Request => ({
  method: 'POST',
  path: '/v1/check',
  json: { subject, relation, object },
});
const query = (path: string, params: Record<string, string>) => `${path}?${new URLSearchParams(params).toString()}`;

// ---------------------------------------------------------------------------------------------
// The attack: every route of the contract, and what is not a route (loads, the window clock)

interface Attack {
  /** The contract's name of the route (everyContractRoute), or what else runs on the node. */
  route: string;
  /** The adversarial input, as the report tells it. */
  what: string;
  /** The tenant whose key is sent (its admin key, unless `key` says otherwise). */
  tenant: keyof Tenants;
  requests: number;
  concurrency: number;
  request: (i: number, state: AttackState) => Request | Promise<Request>;
  /** The statuses it may answer (documented ones that show the route did its work). */
  statuses: number[];
  key?: () => string | null;
}
/** What earlier requests of the attack made, for later ones (ids of keys and clients, an OAuth interaction). */
interface AttackState {
  keyIds: string[];
  clientIds: string[];
  accessTokens: string[];
  interactions: string[];
}

/** Routes of the contract that are not attacked here, and why; every other route must be. */
const NOT_ATTACKED: Record<string, string> = {};

/** What the node serves outside the contract, attacked as its routes are: POST /mcp (docs/mcp.md). */
const MCP = 'mcp';
const OUTSIDE_CONTRACT = [MCP];

/** An MCP tool call, as an MCP client sends it to the stateless endpoint (no session to open first). */
const toolCall = (id: number, name: string, args: Record<string, unknown>): Request => ({
  method: 'POST',
  path: '/mcp',
  headers: { accept: 'application/json, text/event-stream' },
  json: { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } },
});

/** Not routes: attacks run by the node itself, named in the report as routes are. */
const TENANT_LOAD = 'tenant load';
const WINDOW_CLOCK = 'window clock';

const expiresSoon = (i: number) => iso(HOT_START + (HOT + i) * HOT_EXPIRY_STEP_MS + 1);
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
/** The items of the ruled bulk, in turn: held, excluded, past the budget, held through user:*. */
const RULED_BULK = [
  (k: number) => ({ subject: `user:u${k}`, relation: 'open', object: 'doc:fan' }),
  () => ({ subject: 'user:bob', relation: 'open', object: 'doc:fan' }),
  (k: number) => ({ subject: `user:u${k}`, relation: 'open', object: 'doc:fanover' }),
  (k: number) => ({ subject: k % 2 ? 'user:*' : `user:zz${k}`, relation: 'open', object: 'doc:pub' }),
];

const ATTACKS: Attack[] = [
  // Reads
  {
    route: 'check',
    what: 'user in 8,000 groups x 8,000 parents (held)',
    tenant: 'graph',
    requests: 40,
    concurrency: 4,
    request: () => check('user:wide', 'r1', 'n2:fan'),
    statuses: [200, 422],
  },
  {
    route: 'check',
    what: 'user in 8,000 groups x 8,000 parents (not held)',
    tenant: 'graph',
    requests: 40,
    concurrency: 4,
    request: () => check('user:wide', 'r1', 'n2:fanx'),
    statuses: [200, 422],
  },
  {
    route: 'check',
    what: '16 arrows deep, 20 wide',
    tenant: 'graph',
    requests: 40,
    concurrency: 4,
    request: () => check('user:deep', 'r', 'chain:l0_0'),
    statuses: [200, 422],
  },
  {
    route: 'check',
    what: '16 arrows deep through 63 relations',
    tenant: 'graph',
    requests: 40,
    concurrency: 4,
    request: () => check('user:deep', 'r0', 'big0:c0'),
    statuses: [200, 422],
  },
  {
    route: 'check',
    what: '30,000 grants not yet in force',
    tenant: 'pending',
    requests: 40,
    concurrency: 4,
    request: (i) => check(`user:u${i}`, 'viewer', `document:d${i}`),
    statuses: [200],
  },
  {
    route: 'check',
    what: '5,000 windowed grants on one object',
    tenant: 'hot',
    requests: 40,
    concurrency: 4,
    request: (i) => check(`user:s${i}`, 'viewer', 'document:hot'),
    statuses: [200],
  },
  {
    route: 'check',
    what: 'a ruled exclusion through 3,000 parents, each walked (held, excluded)',
    tenant: 'rules',
    requests: 40,
    concurrency: 4,
    request: (i) => check(i % 2 ? `user:u${i}` : 'user:bob', 'open', 'doc:fan'),
    statuses: [200],
  },
  {
    route: 'check',
    what: 'a ruled exclusion through 8,000 parents (past the budget)',
    tenant: 'rules',
    requests: 40,
    concurrency: 4,
    request: (i) => check(`user:u${i}`, 'open', 'doc:fanover'),
    statuses: [422],
  },
  {
    route: 'check',
    what: 'a ruled requirement up 16 arrows, 20 wide',
    tenant: 'rules',
    requests: 40,
    concurrency: 4,
    request: (i) => check('user:deep', 'vetted', `doc:l${i % 17}_0`),
    statuses: [200, 422],
  },
  {
    route: 'check',
    what: 'user:* and unknown users, held through user:* (ruled, 3,000 parents)',
    tenant: 'rules',
    requests: 40,
    concurrency: 4,
    request: (i) => check(i % 2 ? 'user:*' : `user:zz${i}`, 'open', 'doc:pub'),
    statuses: [200],
  },
  {
    route: 'check',
    what: 'person:* and unknown persons, person:* in 5,000 groups (plain, ruled)',
    tenant: 'public',
    requests: 40,
    concurrency: 4,
    request: (i) => check(i % 2 ? 'person:*' : `person:zz${i}`, i % 4 < 2 ? 'viewer' : 'open', `doc:d${PUBLIC_TEAMS - 1 - i}`),
    statuses: [200, 422],
  },
  {
    route: 'checkBulk',
    // 200 a bulk: each check of a user in 8,000 groups costs milliseconds, and the tenant's time share (a
    // quarter while the quiet tenant asks) makes a bulk of 1,000 take longer than REQUEST_TIMEOUT_MS here.
    what: '200 checks of the wide user, half through 8,000 parents',
    tenant: 'graph',
    requests: 2,
    concurrency: 2,
    request: (i) => ({
      method: 'POST',
      path: '/v1/check/bulk',
      json: {
        checks: Array.from({ length: 200 }, (_, k) => ({ subject: 'user:wide', relation: 'r1', object: k % 2 ? `n2:fanx` : `n2:p${i * 200 + k}` })),
      },
    }),
    statuses: [200],
  },
  {
    route: 'checkBulk',
    what: '1,000 deep checks, each subject another',
    tenant: 'graph',
    requests: 8,
    concurrency: 4,
    request: (i) => ({
      method: 'POST',
      path: '/v1/check/bulk',
      json: {
        checks: Array.from({ length: 1000 }, (_, k) => ({ subject: `user:m${k % 5}_${i}`, relation: 'r', object: `chain:l0_${k % CHAIN_WIDTH}` })),
      },
    }),
    statuses: [200],
  },
  {
    route: 'checkBulk',
    // Each item is one unit of work (the rule evaluator's), a few milliseconds here, up to tens for one past the budget;
    // at the tenant's time share a bulk of 200 took 13 s, too near REQUEST_TIMEOUT_MS on a busy machine.
    what: '100 ruled checks: exclusions through 3,000 and 8,000 parents, user:* among the subjects',
    tenant: 'rules',
    requests: 4,
    concurrency: 2,
    request: (i) => ({
      method: 'POST',
      path: '/v1/check/bulk',
      json: { checks: Array.from({ length: 100 }, (_, k) => RULED_BULK[k % RULED_BULK.length]!(i * 100 + k)) },
    }),
    statuses: [200],
  },
  {
    route: 'checkBulk',
    what: '1,000 ruled checks up the 16-arrow chain, 20 wide',
    tenant: 'rules',
    requests: 4,
    concurrency: 2,
    request: () => ({
      method: 'POST',
      path: '/v1/check/bulk',
      json: {
        checks: Array.from({ length: 1000 }, (_, k) => ({
          subject: 'user:deep',
          relation: k % 2 ? 'vetted' : 'trusted',
          object: `doc:l${k % 17}_${Math.floor(k / 17) % RULED_CHAIN_WIDTH}`,
        })),
      },
    }),
    statuses: [200],
  },
  {
    route: 'explain',
    what: 'user in 8,000 groups x 8,000 parents (held)',
    tenant: 'graph',
    requests: 6,
    concurrency: 3,
    request: () => ({ ...check('user:wide', 'r1', 'n2:fan'), path: '/v1/check/explain' }),
    statuses: [200, 422],
  },
  {
    route: 'explain',
    what: 'user in 8,000 groups x 8,000 parents (not held)',
    tenant: 'graph',
    requests: 6,
    concurrency: 3,
    request: () => ({ ...check('user:wide', 'r1', 'n2:fanx'), path: '/v1/check/explain' }),
    statuses: [200, 422],
  },
  {
    route: 'explain',
    what: '16 arrows deep, 20 wide',
    tenant: 'graph',
    requests: 6,
    concurrency: 3,
    request: () => ({ ...check('user:deep', 'r', 'chain:l0_0'), path: '/v1/check/explain' }),
    statuses: [200, 422],
  },
  {
    route: 'explain',
    what: 'a trivial explain beside 30,000 grants not yet in force',
    tenant: 'pending',
    requests: 6,
    concurrency: 3,
    request: () => ({ ...check('user:p', 'viewer', 'document:now'), path: '/v1/check/explain' }),
    statuses: [200],
  },
  {
    route: 'explain',
    what: 'a grant not yet in force, among 30,000',
    tenant: 'pending',
    requests: 6,
    concurrency: 3,
    request: (i) => ({ ...check(`user:u${i}`, 'viewer', `document:d${i}`), path: '/v1/check/explain' }),
    statuses: [200],
  },
  {
    route: 'explain',
    what: '5,000 windowed grants on one object',
    tenant: 'hot',
    requests: 6,
    concurrency: 3,
    request: (i) => ({ ...check(`user:s${i}`, 'viewer', 'document:hot'), path: '/v1/check/explain' }),
    statuses: [200],
  },
  {
    route: 'explain',
    what: 'a ruled exclusion through 3,000 parents: allowed, excluded, held by user:*',
    tenant: 'rules',
    requests: 6,
    concurrency: 3,
    request: (i) => ({ ...check(['user:u0', 'user:bob', 'user:*'][i % 3]!, 'open', i % 3 === 2 ? 'doc:pub' : 'doc:fan'), path: '/v1/check/explain' }),
    statuses: [200],
  },
  {
    route: 'explain',
    what: 'a ruled requirement up 16 arrows, 20 wide: not met, allowed or past the budget',
    tenant: 'rules',
    requests: 6,
    concurrency: 3,
    request: (i) => ({ ...check(i % 2 ? 'user:u0' : 'user:deep', 'vetted', i % 2 ? 'doc:l0_1' : `doc:l${4 * i}_0`), path: '/v1/check/explain' }),
    statuses: [200, 422],
  },
  {
    route: 'explain',
    what: 'an unknown person, through person:* in 5,000 groups',
    tenant: 'public',
    requests: 6,
    concurrency: 3,
    request: (i) => ({ ...check(`person:zz${i}`, 'viewer', `doc:d${PUBLIC_TEAMS - 1}`), path: '/v1/check/explain' }),
    statuses: [200],
  },
  {
    route: 'objects.list',
    what: 'the wide user, through 8,000 groups',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: () => ({ method: 'GET', path: query('/v1/objects', { subject: 'user:wide', relation: 'r1', namespace: 'n2', limit: '1000' }) }),
    statuses: [200, 422],
  },
  {
    route: 'objects.list',
    what: 'a member of the 16-deep chain, 63 relations',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: () => ({ method: 'GET', path: query('/v1/objects', { subject: 'user:deep', relation: 'r0', namespace: 'big0', limit: '1000' }) }),
    statuses: [200],
  },
  {
    route: 'objects.list',
    what: 'a user among 30,000 grants not yet in force',
    tenant: 'pending',
    requests: 12,
    concurrency: 4,
    request: (i) => ({
      method: 'GET',
      path: query('/v1/objects', { subject: `user:u${i}`, relation: 'viewer', namespace: 'document', limit: '1000' }),
    }),
    statuses: [200],
  },
  {
    route: 'objects.list',
    what: 'a ruled relation, its candidates checked one by one (5,000 hold the base)',
    tenant: 'rules',
    requests: 8,
    concurrency: 4,
    request: (i) => ({ method: 'GET', path: query('/v1/objects', { subject: `user:u${i}`, relation: 'open', namespace: 'doc', limit: '1000' }) }),
    statuses: [200],
  },
  {
    route: 'objects.list',
    what: 'a ruled relation none of 13,000 candidates grants (5,000 hold the base)',
    tenant: 'rules',
    requests: 4,
    concurrency: 2,
    request: () => ({ method: 'GET', path: query('/v1/objects', { subject: 'user:late', relation: 'vetted', namespace: 'doc', limit: '1000' }) }),
    statuses: [200],
  },
  {
    route: 'objects.list',
    what: 'an unknown person, through person:* in 5,000 groups',
    tenant: 'public',
    requests: 8,
    concurrency: 4,
    request: (i) => ({
      method: 'GET',
      path: query('/v1/objects', { subject: `person:zz${i}`, relation: 'viewer', namespace: 'doc', limit: '1000' }),
    }),
    statuses: [200, 422],
  },
  {
    route: 'subjects.list',
    what: '8,000 parents, their groups and members',
    tenant: 'graph',
    requests: 4,
    concurrency: 2,
    request: () => ({ method: 'GET', path: query('/v1/subjects', { object: 'n2:fan', relation: 'r1', subject_namespace: 'user', limit: '100' }) }),
    statuses: [200],
  },
  {
    route: 'subjects.list',
    what: '16 arrows deep, 20 wide',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: () => ({
      method: 'GET',
      path: query('/v1/subjects', { object: 'chain:l0_0', relation: 'r', subject_namespace: 'user', limit: '1000' }),
    }),
    statuses: [200],
  },
  {
    route: 'subjects.list',
    what: '5,000 windowed holders of one object',
    tenant: 'hot',
    requests: 12,
    concurrency: 4,
    request: () => ({
      method: 'GET',
      path: query('/v1/subjects', { object: 'document:hot', relation: 'viewer', subject_namespace: 'user', limit: '1000' }),
    }),
    statuses: [200],
  },
  {
    route: 'subjects.list',
    what: 'a ruled exclusion through 3,000 parents, 20,000 candidates holding the base',
    tenant: 'rules',
    requests: 4,
    concurrency: 2,
    request: () => ({ method: 'GET', path: query('/v1/subjects', { object: 'doc:fan', relation: 'open', subject_namespace: 'user', limit: '100' }) }),
    statuses: [200],
  },
  {
    route: 'subjects.list',
    what: 'user:* holds, plain and ruled: every user a candidate',
    tenant: 'rules',
    requests: 4,
    concurrency: 2,
    request: (i) => ({
      method: 'GET',
      path: query('/v1/subjects', {
        object: 'doc:pub',
        relation: i % 2 ? 'open' : 'viewer',
        subject_namespace: 'user',
        limit: i % 2 ? '100' : '1000',
      }),
    }),
    statuses: [200],
  },
  {
    route: 'subjects.list',
    what: 'person:* holds through 5,000 groups: every person a candidate',
    tenant: 'public',
    requests: 4,
    concurrency: 2,
    request: () => ({
      method: 'GET',
      path: query('/v1/subjects', { object: `doc:d${PUBLIC_TEAMS - 1}`, relation: 'viewer', subject_namespace: 'person', limit: '1000' }),
    }),
    statuses: [200, 422],
  },
  {
    route: 'grants.list',
    what: "8,000 parents' grants, 1,000 a page",
    tenant: 'graph',
    requests: 8,
    concurrency: 4,
    request: () => ({ method: 'GET', path: query('/v1/grants', { object: 'n2:fan', limit: '1000' }) }),
    statuses: [200],
  },
  {
    route: 'grants.list',
    what: 'grants not yet in force, 1,000 a page',
    tenant: 'pending',
    requests: 8,
    concurrency: 4,
    request: () => ({ method: 'GET', path: query('/v1/grants', { limit: '1000' }) }),
    statuses: [200],
  },
  {
    route: 'namespaces.list',
    what: 'a model at the limits (9,9xx rows)',
    tenant: 'graph',
    requests: 20,
    concurrency: 4,
    request: () => ({ method: 'GET', path: '/v1/namespaces' }),
    statuses: [200],
  },
  {
    route: 'namespaces.get',
    what: 'a namespace of 64 relations, 16 includes each',
    tenant: 'graph',
    requests: 20,
    concurrency: 4,
    request: () => ({ method: 'GET', path: '/v1/namespaces/big0' }),
    statuses: [200],
  },
  {
    route: 'agents.list',
    what: 'agents of the graph tenant',
    tenant: 'graph',
    requests: 20,
    concurrency: 4,
    request: () => ({ method: 'GET', path: '/v1/agents?limit=1000' }),
    statuses: [200],
  },
  {
    route: 'agents.get',
    what: 'an agent in 3,000 groups',
    tenant: 'graph',
    requests: 20,
    concurrency: 4,
    request: () => ({ method: 'GET', path: '/v1/agents/bot' }),
    statuses: [200],
  },
  {
    route: 'changes.list',
    what: 'the feed of 100,000 grant writes, 1,000 a page',
    tenant: 'graph',
    requests: 8,
    concurrency: 4,
    request: () => ({ method: 'GET', path: '/v1/changes?limit=1000' }),
    statuses: [200],
  },
  // Writes: each makes the node catch its held copy up with the log.
  {
    route: 'grants.create',
    what: 'a parent more on the fan-out object',
    tenant: 'graph',
    requests: 20,
    concurrency: 4,
    request: (i) => ({ method: 'POST', path: '/v1/grants', json: { subject: `n2:new${i}`, relation: 'parent', object: 'n2:fan' } }),
    statuses: [201],
  },
  {
    route: 'grants.create',
    what: 'a windowed grant more on the hot object',
    tenant: 'hot',
    requests: 20,
    concurrency: 4,
    request: (i) => ({
      method: 'POST',
      path: '/v1/grants',
      json: { subject: `user:c${i}`, relation: 'viewer', object: 'document:hot', expires_at: expiresSoon(i) },
    }),
    statuses: [201],
  },
  {
    route: 'grants.revoke',
    what: 'a parent of the fan-out object',
    tenant: 'graph',
    requests: 20,
    concurrency: 4,
    request: (i) => ({ method: 'DELETE', path: '/v1/grants', json: { subject: `n2:new${i}`, relation: 'parent', object: 'n2:fan' } }),
    statuses: [204],
  },
  {
    route: 'grants.revoke',
    what: 'a windowed grant of the hot object',
    tenant: 'hot',
    requests: 20,
    concurrency: 4,
    request: (i) => ({ method: 'DELETE', path: '/v1/grants', json: { subject: `user:c${i}`, relation: 'viewer', object: 'document:hot' } }),
    statuses: [204],
  },
  {
    route: 'grants.batch',
    what: '1,000 parents more on the fan-out object',
    tenant: 'graph',
    requests: 4,
    concurrency: 2,
    request: (i) => ({
      method: 'POST',
      path: '/v1/grants/batch',
      json: { writes: Array.from({ length: 1000 }, (_, k) => ({ subject: `n2:b${i}_${k}`, relation: 'parent', object: 'n2:fan' })) },
    }),
    statuses: [200],
  },
  {
    route: 'grants.batch',
    what: '1,000 windowed grants more on the hot object',
    tenant: 'hot',
    requests: 2,
    concurrency: 1,
    request: (i) => ({
      method: 'POST',
      path: '/v1/grants/batch',
      json: {
        writes: Array.from({ length: 1000 }, (_, k) => ({
          subject: `user:b${i}_${k}`,
          relation: 'viewer',
          object: 'document:hot',
          expires_at: expiresSoon(1000 * i + k),
        })),
      },
    }),
    statuses: [200],
  },
  {
    route: 'namespaces.create',
    what: 'one namespace past the 10,000 rows (compiled, refused)',
    tenant: 'graph',
    requests: 8,
    concurrency: 4,
    request: (i) => ({
      method: 'POST',
      path: '/v1/namespaces',
      json: { name: `over${i}`, relations: denseModel(MODEL_LIMITS.relationsPerNamespace) },
    }),
    statuses: [400],
  },
  {
    route: 'namespaces.update',
    what: 'a namespace at the limits, changed (recompiled, in memory too)',
    tenant: 'graph',
    requests: 8,
    concurrency: 1,
    request: (i) => ({
      method: 'PUT',
      path: '/v1/namespaces/big0',
      json: { relations: denseModel(MODEL_LIMITS.relationsPerNamespace, (i + 1) % 2) },
    }),
    statuses: [200],
  },
  {
    route: 'namespaces.delete',
    what: 'a namespace in use by 8,000 grants (refused), and unused ones',
    tenant: 'graph',
    requests: 8,
    concurrency: 4,
    request: (i) => ({ method: 'DELETE', path: i % 2 ? '/v1/namespaces/group' : `/v1/namespaces/spare${i}` }),
    statuses: [204, 409],
  },
  {
    route: 'agents.create',
    what: 'agents of wide scopes',
    tenant: 'graph',
    requests: 20,
    concurrency: 4,
    request: (i) => ({ method: 'POST', path: '/v1/agents', json: { external_id: `a${i}`, scope: ['*:*', 'n2:r1', 'big0:*'] } }),
    statuses: [201],
  },
  {
    route: 'agents.delete',
    what: 'the killswitch on an agent in 3,000 groups',
    tenant: 'graph',
    requests: 1,
    concurrency: 1,
    request: () => ({ method: 'DELETE', path: '/v1/agents/bot' }),
    statuses: [200],
  },
  {
    route: 'keys.create',
    what: 'keys of every scope',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: () => ({ method: 'POST', path: '/v1/keys', json: { label: 'stall', scopes: ['check:read', 'grant:read', 'grant:write'] } }),
    statuses: [201],
  },
  {
    route: 'keys.list',
    what: "the graph tenant's keys",
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: () => ({ method: 'GET', path: '/v1/keys' }),
    statuses: [200],
  },
  {
    route: 'keys.revoke',
    what: 'the keys just made',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: async (i, state) => {
      if (state.keyIds.length === 0)
        state.keyIds.push(...keyIdsOf(JSON.parse((await call(t.graph.adminKey, { method: 'GET', path: '/v1/keys' })).text)));
      return { method: 'DELETE', path: `/v1/keys/${state.keyIds[i]}` };
    },
    statuses: [204],
  },
  {
    route: 'oauth.clients.create',
    what: 'confidential clients',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: () => ({ method: 'POST', path: '/v1/oauth/clients', json: { name: 'stall', type: 'confidential', scopes: ['check:read'] } }),
    statuses: [201],
  },
  {
    route: 'oauth.clients.list',
    what: "the graph tenant's clients",
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: () => ({ method: 'GET', path: '/v1/oauth/clients' }),
    statuses: [200],
  },
  {
    route: 'oauth.clients.delete',
    what: 'the clients just made',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: async (i, state) => {
      if (state.clientIds.length === 0) {
        const listed = JSON.parse((await call(t.graph.adminKey, { method: 'GET', path: '/v1/oauth/clients' })).text) as {
          clients: { client_id: string; name: string }[];
        };
        state.clientIds.push(...listed.clients.filter((c) => c.name === 'stall').map((c) => c.client_id));
      }
      return { method: 'DELETE', path: `/v1/oauth/clients/${state.clientIds[i]}` };
    },
    statuses: [204],
  },
  // The OAuth protocol: light for the engine, driven so that none is left out.
  {
    route: 'oauth.token',
    what: 'client_credentials',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    key: () => null,
    request: () => tokenRequest(),
    statuses: [200],
  },
  {
    route: 'oauth.introspect',
    what: 'a live access token',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: async (_i, state) => ({ method: 'POST', path: '/v1/oauth/introspect', form: { token: await accessToken(state) } }),
    statuses: [200],
  },
  {
    route: 'oauth.introspectByQuery',
    what: 'a live access token',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: async (_i, state) => ({ method: 'GET', path: query('/v1/oauth/introspect', { token: await accessToken(state) }) }),
    statuses: [200],
  },
  {
    route: 'oauth.authorize',
    what: "a public client's authorization request",
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    key: () => null,
    request: () => ({
      method: 'GET',
      path: query('/v1/oauth/authorize', {
        response_type: 'code',
        client_id: oauth.publicId,
        redirect_uri: REDIRECT_URI,
        scope: 'check:read',
        state: 'stall',
        code_challenge: CHALLENGE,
        code_challenge_method: 'S256',
      }),
    }),
    statuses: [303],
  },
  {
    route: 'oauth.consent',
    what: 'the consent page of an interaction',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    key: () => null,
    request: async (_i, state) => ({ method: 'GET', path: `/v1/oauth/consent/${await interaction(state)}` }),
    statuses: [200, 400],
  },
  {
    route: 'oauth.decide',
    what: 'a consent without its page (refused)',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    key: () => null,
    request: async (_i, state) => ({
      method: 'POST',
      path: `/v1/oauth/consent/${await interaction(state)}`,
      form: { decision: 'approve', csrf: 'x', api_key: t.graph.adminKey },
    }),
    statuses: [400, 403],
  },
  {
    route: 'oauth.resume',
    what: 'an interaction resumed without its cookie (refused)',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    key: () => null,
    request: async (_i, state) => ({ method: 'GET', path: `/v1/oauth/authorize/${await interaction(state)}` }),
    statuses: [400],
  },
  {
    route: 'oauth.revoke',
    what: 'access tokens',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    key: () => null,
    request: async () => ({ ...tokenRequest(), path: '/v1/oauth/revoke', form: { token: await newAccessToken() } }),
    statuses: [200],
  },
  {
    route: 'oauth.register',
    what: 'self-registrations from one address, past its limit (docs/oauth.md#dynamic-client-registration)',
    tenant: 'graph',
    requests: 40,
    concurrency: 4,
    key: () => null,
    request: (i) => ({
      method: 'POST',
      path: '/v1/oauth/register',
      json: { client_name: `stall-${i}`, redirect_uris: [`http://127.0.0.1:${40000 + i}/callback`], token_endpoint_auth_method: 'none' },
    }),
    statuses: [201, 429],
  },
  // The MCP endpoint: its tools call the routes' implementations, each call a request (a problem is a tool error, 200).
  {
    route: MCP,
    what: 'check: user in 8,000 groups x 8,000 parents (held)',
    tenant: 'graph',
    requests: 40,
    concurrency: 4,
    request: (i) => toolCall(i, 'check', { subject: 'user:wide', relation: 'r1', object: 'n2:fan' }),
    statuses: [200],
  },
  {
    route: MCP,
    what: 'list_objects: the wide user, through 8,000 groups',
    tenant: 'graph',
    requests: 12,
    concurrency: 4,
    request: (i) => toolCall(i, 'list_objects', { subject: 'user:wide', relation: 'r1', namespace: 'n2', limit: 1000 }),
    statuses: [200, 422],
  },
  {
    route: MCP,
    what: 'write_grants: 1,000 parents more on the fan-out object',
    tenant: 'graph',
    requests: 4,
    concurrency: 2,
    request: (i) =>
      toolCall(i, 'write_grants', {
        writes: Array.from({ length: 1000 }, (_, k) => ({ subject: `n2:m${i}_${k}`, relation: 'parent', object: 'n2:fan' })),
      }),
    statuses: [200],
  },
];

const REDIRECT_URI = 'https://app.example/callback';
const tokenRequest = (): Request => ({
  method: 'POST',
  path: '/v1/oauth/token',
  form: { grant_type: 'client_credentials' },
  headers: { authorization: basic(oauth.confidential.client_id, oauth.confidential.client_secret) },
});
async function newAccessToken(): Promise<string> {
  const res = await call(null, tokenRequest());
  expect(res.status, res.text).toBe(200);
  return (JSON.parse(res.text) as { access_token: string }).access_token;
}
const accessToken = async (state: AttackState) => (state.accessTokens[0] ??= await newAccessToken());
async function interaction(state: AttackState): Promise<string> {
  if (state.interactions[0] === undefined) {
    const res = await call(null, await ATTACKS.find((a) => a.route === 'oauth.authorize')!.request(0, state));
    const uid = /\/consent\/([^/?]+)/.exec(res.headers.get('location') ?? '')?.[1];
    expect(uid, `authorize answered ${res.status} ${res.headers.get('location')}`).toBeDefined();
    state.interactions.push(uid!);
  }
  return state.interactions[0]!;
}
const keyIdsOf = (body: { keys: { id: string; label: string; revoked_at?: string | null }[] }) =>
  body.keys.filter((k) => k.label === 'stall').map((k) => k.id);

// ---------------------------------------------------------------------------------------------
// Measuring

/** The quiet tenant's checks, sent every QUIET_PERIOD_MS whatever the answers do, each timed from when it was due. */
class QuietChecks {
  readonly samples: { phase: string; ms: number }[] = [];
  /** Answers other than the check's (there should be none). */
  readonly wrong: string[] = [];
  phase = 'warm-up';
  private running = false;
  private done: Promise<void> = Promise.resolve();

  start(): void {
    this.running = true;
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  /** Samples taken in the phase. */
  of(phase: string): number[] {
    return this.samples.filter((s) => s.phase === phase).map((s) => s.ms);
  }

  /** Runs the quiet checks alone for `count` samples, as `phase`. */
  async alone(phase: string, count: number): Promise<number[]> {
    this.phase = phase;
    await expect.poll(() => this.of(phase).length, { timeout: 120_000, interval: 50 }).toBeGreaterThanOrEqual(count);
    this.phase = 'between';
    return this.of(phase);
  }

  private async loop(): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    const start = performance.now();
    for (let due = 0; this.running; due++) {
      const dueAt = start + due * QUIET_PERIOD_MS;
      const wait = dueAt - performance.now();
      if (wait > 0) await sleep(wait);
      // Late after a stall: every check that fell due meanwhile is sent now, timed from when it was due.
      const phase = this.phase;
      const sent = call(t.quiet.adminKey, check('user:q', 'viewer', 'document:q1')).then(
        (res) => {
          if (res.text === '{"allowed":true}') this.samples.push({ phase, ms: performance.now() - dueAt });
          else this.wrong.push(`${res.status} ${res.text}`);
        },
        (error: Error) => void this.wrong.push(`${error.message}: ${String((error.cause as Error | undefined)?.message)}`),
      );
      inFlight.add(sent);
      void sent.then(() => inFlight.delete(sent));
    }
    await Promise.all(inFlight);
  }
}

/**
 * The event loop's stalls, two ways. `monitorEventLoopDelay`'s largest delay is the wall time the
 * loop was held, whatever held it: on a busy machine also the time the process was not scheduled at
 * all (other test files, PostgreSQL on the same two cores), which the engine cannot help. So a tick
 * of our own every LOOP_RESOLUTION_MS also reads the process's CPU time, and a stall counts against
 * the bound only as far as the process was on a CPU during it: min(delay, CPU time since the last
 * tick). On an idle machine the two agree; the report gives both.
 */
class Stalls {
  private readonly histogram = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  /** The largest delay of a tick that the process spent on a CPU, ms, since the last reset. */
  private ownMax = 0;
  /** The longest garbage collection since the last reset, ms: what of a stall the collector's. */
  private gcMax = 0;
  private readonly collections = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) this.gcMax = Math.max(this.gcMax, entry.duration);
  });
  private timer: NodeJS.Timeout | undefined;

  start(): void {
    this.histogram.enable();
    this.collections.observe({ entryTypes: ['gc'] });
    let last = performance.now();
    let lastCpu = process.cpuUsage();
    const tick = () => {
      const now = performance.now();
      const cpu = process.cpuUsage(lastCpu);
      this.ownMax = Math.max(this.ownMax, Math.min(now - last - LOOP_RESOLUTION_MS, (cpu.user + cpu.system) / 1000));
      last = now;
      lastCpu = process.cpuUsage();
      this.timer = setTimeout(tick, LOOP_RESOLUTION_MS);
    };
    this.timer = setTimeout(tick, LOOP_RESOLUTION_MS);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.histogram.disable();
    this.collections.disconnect();
  }

  reset(): void {
    this.histogram.reset();
    this.ownMax = 0;
    this.gcMax = 0;
  }

  /** The largest stalls since the last reset, ms: on a CPU (what the bound applies to), in wall time (monitorEventLoopDelay's max), and the longest garbage collection. */
  read(): { stallMs: number; wallStallMs: number; gcMs: number } {
    return { stallMs: this.ownMax, wallStallMs: this.histogram.max / 1e6, gcMs: this.gcMax };
  }
}

interface Measured {
  route: string;
  what: string;
  tenant: string;
  /** The largest single stall of the event loop during the phase that the process spent on a CPU, ms (Stalls). */
  stallMs: number;
  /** monitorEventLoopDelay's largest delay during the phase, ms. */
  wallStallMs: number;
  /** The longest garbage collection during the phase, ms (reported: the test's own heap is the server's). */
  gcMs: number;
  quietP99Ms: number | null;
  quietSamples: number;
  /** Of the phase's quiet checks, how many took longer than the bound on the p99 (set once the bound is known): what puts the p99 over it. */
  quietOverBound?: number;
  ms: number;
  statuses: Record<string, number>;
}

/** Runs `work` as one phase: the loop's stalls from its start, and the quiet checks sent meanwhile, are its. */
async function measure(
  { route, what, tenant }: Pick<Measured, 'route' | 'what' | 'tenant'>,
  { quiet, stalls }: { quiet: QuietChecks; stalls: Stalls },
  work: () => Promise<Record<string, number>>,
): Promise<Measured> {
  const name = `${route}: ${what}`;
  quiet.phase = name;
  stalls.reset();
  const started = performance.now();
  const statuses = await work();
  const ms = performance.now() - started;
  const stalled = stalls.read();
  quiet.phase = 'between';
  const samples = quiet.of(name);
  return { route, what, tenant, ...stalled, quietP99Ms: samples.length > 0 ? p99(samples) : null, quietSamples: samples.length, ms, statuses };
}

/** Sends the attack's requests, `concurrency` at a time; counts the statuses. */
async function run(attack: Attack, state: AttackState): Promise<Record<string, number>> {
  const statuses: Record<string, number> = {};
  let next = 0;
  const key = attack.key ? attack.key() : t[attack.tenant].adminKey;
  const worker = async () => {
    for (let i = next++; i < attack.requests; i = next++) {
      const res = await call(key, await attack.request(i, state));
      // A tool's problem (a check too complex, as /v1's 422) is answered 200 too: counted as its problem's status.
      const problemStatus = attack.route === MCP ? toolProblemStatus(res.text) : undefined;
      const answered = problemStatus === undefined ? String(res.status) : `${res.status} tool error ${problemStatus}`;
      statuses[answered] = (statuses[answered] ?? 0) + 1;
      if (!attack.statuses.includes(problemStatus ?? res.status))
        console.warn(`stall test: ${attack.route} (${attack.what}) answered ${res.status}: ${res.text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: attack.concurrency }, worker));
  // A read after the writes, as their client would make: the catch-up they leave (the log replayed) is this phase's.
  const probe = await call(t[attack.tenant].adminKey, PROBES[attack.tenant]);
  if (probe.text !== '{"allowed":true}') statuses[`probe ${probe.status}`] = 1;
  return statuses;
}

/** The status of the problem an MCP tool answered with (docs/mcp.md), or undefined when it answered a result. */
function toolProblemStatus(text: string): number | undefined {
  let body: { result?: { isError?: boolean; content?: { text: string }[] } };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return undefined; // not a JSON-RPC answer (a refusal before the endpoint): its HTTP status is counted
  }
  if (body.result?.isError !== true) return undefined;
  return (JSON.parse(body.result.content![0]!.text) as { status: number }).status;
}

/** A check each tenant allows directly. */
const PROBES: Record<keyof Tenants, Request> = {
  quiet: check('user:q', 'viewer', 'document:q1'),
  graph: check('user:deep', 'r', `chain:l${DEEP}_0`),
  pending: check('user:p', 'viewer', 'document:now'),
  hot: check('user:always', 'viewer', 'document:hot'),
  rules: check('user:deep', 'viewer', 'doc:l0_0'),
  public: check('person:n0', 'viewer', 'doc:n0'),
};

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!;
}

// ---------------------------------------------------------------------------------------------

describe('the stall test', () => {
  it('attacks every route of the contract and /mcp (a route added must be added here, or to NOT_ATTACKED with a reason)', () => {
    const routes = [...everyContractRoute().map((r) => r.name), ...OUTSIDE_CONTRACT];
    const attacked = new Set(ATTACKS.map((a) => a.route));
    expect(routes.filter((name) => !attacked.has(name) && !(name in NOT_ATTACKED))).toEqual([]);
    expect([...attacked, ...Object.keys(NOT_ATTACKED)].filter((name) => !routes.includes(name))).toEqual([]);
  });

  it(`keeps every stall under ${MAX_STALL_MS} ms and the quiet tenant's p99 within ${MAX_SLOWDOWN}x its own, under every route and the window clock`, async ({
    task,
  }) => {
    await oauthClients();
    const quiet = new QuietChecks();
    const stalls = new Stalls();
    const on = { quiet, stalls };
    const results: Measured[] = [];
    stalls.start();
    quiet.start();
    try {
      await quiet.alone('warm-up', QUIET_WARM_UP);
      stalls.reset();
      const before = await quiet.alone('alone before', QUIET_ALONE_SAMPLES);
      const aloneStalls = stalls.read();

      for (const tenant of ['graph', 'pending', 'hot', 'rules', 'public'] as const) {
        results.push(
          await measure({ route: TENANT_LOAD, what: `the ${tenant} tenant`, tenant }, on, async () => ({
            [String(await services.heldTenants.load(t[tenant].id))]: 1,
          })),
        );
      }
      const state: AttackState = { keyIds: [], clientIds: [], accessTokens: [], interactions: [] };
      for (const attack of ATTACKS) results.push(await measure(attack, on, () => run(attack, state)));
      results.push(
        await measure(
          { route: WINDOW_CLOCK, what: `${WINDOW_STEPS} steps of ${WINDOW_STEP_MS} ms through the hot expiries`, tenant: 'hot' },
          on,
          windowClock,
        ),
      );
      const after = await quiet.alone('alone after', QUIET_ALONE_SAMPLES);

      const attacked = results.flatMap((r) => quiet.of(`${r.route}: ${r.what}`));
      // Alone is the slower of before and after: the machine's own load may change while the attack runs.
      const aloneP99 = Math.max(p99(before), p99(after));
      const bound = MAX_SLOWDOWN * Math.max(aloneP99, QUIET_P99_FLOOR_MS);
      for (const r of results) r.quietOverBound = quiet.of(`${r.route}: ${r.what}`).filter((ms) => ms > bound).length;
      const report = {
        project: task.file.projectName ?? '',
        bounds: { maxStallMs: MAX_STALL_MS, maxSlowdown: MAX_SLOWDOWN, quietP99FloorMs: QUIET_P99_FLOOR_MS },
        alone: { quietP99Ms: aloneP99, beforeP99Ms: p99(before), afterP99Ms: p99(after), quietSamples: before.length + after.length, ...aloneStalls },
        underAttack: { quietP99Ms: p99(attacked), quietSamples: attacked.length },
        byRoute: largestByRoute(results),
        phases: results,
      };
      writeReport(report);
      expect.soft(results.filter((r) => r.stallMs > MAX_STALL_MS).map((r) => `${r.route} (${r.what}): ${r.stallMs.toFixed(0)} ms`)).toEqual([]);
      expect.soft(report.underAttack.quietP99Ms, `quiet p99 under attack against ${bound.toFixed(1)} ms`).toBeLessThanOrEqual(bound);
      // Each attack did its work: answered as its route documents for that input, the loads held, the window clock's reads answered.
      expect.soft(results.filter((r) => !answeredAsExpected(r)).map((r) => `${r.route} (${r.what}): ${JSON.stringify(r.statuses)}`)).toEqual([]);
      expect.soft(quiet.wrong).toEqual([]);
    } finally {
      await quiet.stop();
      stalls.stop();
    }
  }, 600_000);
});

/** The OAuth clients the protocol routes are driven with. */
async function oauthClients(): Promise<void> {
  const confidential = await call(t.graph.adminKey, {
    method: 'POST',
    path: '/v1/oauth/clients',
    json: { name: 'stall-cc', type: 'confidential', scopes: ['check:read'] },
  });
  expect(confidential.status, confidential.text).toBe(201);
  oauth.confidential = JSON.parse(confidential.text) as { client_id: string; client_secret: string };
  const pub = await call(t.graph.adminKey, {
    method: 'POST',
    path: '/v1/oauth/clients',
    json: { name: 'stall-public', type: 'public', scopes: ['check:read'], redirect_uris: [REDIRECT_URI] },
  });
  expect(pub.status, pub.text).toBe(201);
  oauth.publicId = (JSON.parse(pub.text) as { client_id: string }).client_id;
}

/** Moves Date through the hot expiries a step at a time; after each step, the hot tenant's reads meet the window events. */
async function windowClock(): Promise<Record<string, number>> {
  const statuses: Record<string, number> = {};
  const count = (status: number) => (statuses[status] = (statuses[status] ?? 0) + 1);
  for (let step = 1; step <= WINDOW_STEPS; step++) {
    vi.setSystemTime(HOT_START + step * WINDOW_STEP_MS);
    const reads = await Promise.all([
      call(t.hot.adminKey, check('user:always', 'viewer', 'document:hot')),
      call(t.hot.adminKey, check(`user:s${HOT - step}`, 'viewer', 'document:hot')),
      call(t.hot.adminKey, {
        method: 'GET',
        path: query('/v1/subjects', { object: 'document:hot', relation: 'viewer', subject_namespace: 'user', limit: '10' }),
      }),
    ]);
    reads.forEach((res) => count(res.status));
    // Expired just now: the step's window events were applied before the answer.
    const expired = `user:s${Math.floor((step * WINDOW_STEP_MS) / HOT_EXPIRY_STEP_MS) - 1}`;
    expect((await call(t.hot.adminKey, check(expired, 'viewer', 'document:hot'))).text).toBe('{"allowed":false}');
  }
  return statuses;
}

/** Whether every answer of the phase is one its attack expects (a load: held; the window clock: 200). */
function answeredAsExpected(r: Measured): boolean {
  const expected =
    r.route === TENANT_LOAD
      ? ['true']
      : r.route === WINDOW_CLOCK
        ? ['200']
        : ATTACKS.find((a) => a.route === r.route && a.what === r.what)!.statuses.map((s) =>
            r.route === MCP && s !== 200 ? `200 tool error ${s}` : String(s),
          );
  return Object.keys(r.statuses).every((status) => expected.includes(status));
}

/** Per route, its largest stall and the phase that made it. */
function largestByRoute(results: Measured[]): Record<string, Pick<Measured, 'stallMs' | 'wallStallMs' | 'what' | 'quietP99Ms'>> {
  const out: Record<string, Pick<Measured, 'stallMs' | 'wallStallMs' | 'what' | 'quietP99Ms'>> = {};
  for (const { route, stallMs, wallStallMs, what, quietP99Ms } of results) {
    if ((out[route]?.stallMs ?? -1) < stallMs) out[route] = { stallMs, wallStallMs, what, quietP99Ms };
  }
  return out;
}

/** The report: printed for the note, and test-artifacts/stall-<project>.json. */
function writeReport(report: {
  project: string;
  alone: { quietP99Ms: number; beforeP99Ms: number; afterP99Ms: number; quietSamples: number; stallMs: number; wallStallMs: number };
  underAttack: { quietP99Ms: number; quietSamples: number };
  phases: Measured[];
}): void {
  const ms = (v: number | null) => (v === null ? '-' : `${v.toFixed(1)} ms`);
  const { alone, underAttack } = report;
  const lines = [
    `stall test (${report.project}, node ${process.execArgv.join(' ')}): quiet check p99 alone ${ms(alone.quietP99Ms)} (before ${ms(alone.beforeP99Ms)}, after ${ms(alone.afterP99Ms)}, ` +
      `${alone.quietSamples} checks; largest stall ${ms(alone.stallMs)} on CPU, ${ms(alone.wallStallMs)} wall), under attack ${ms(underAttack.quietP99Ms)} (${underAttack.quietSamples} checks)`,
    `${'route'.padEnd(22)} ${'stall'.padStart(10)} ${'wall'.padStart(10)} ${'gc'.padStart(10)} ${'quiet p99'.padStart(10)} ${'over'.padStart(5)} ${'time'.padStart(10)}  statuses  what`,
    ...report.phases.map(
      (r) =>
        `${r.route.padEnd(22)} ${ms(r.stallMs).padStart(10)} ${ms(r.wallStallMs).padStart(10)} ${ms(r.gcMs).padStart(10)} ${ms(r.quietP99Ms).padStart(10)} ${String(r.quietOverBound ?? '-').padStart(5)} ${ms(r.ms).padStart(10)}  ` +
        `${JSON.stringify(r.statuses)}  ${r.what}${r.stallMs > MAX_STALL_MS ? '  <-- over' : ''}`,
    ),
  ];
  console.log(lines.join('\n'));
  mkdirSync('test-artifacts', { recursive: true });
  writeFileSync(`test-artifacts/stall-${report.project || 'default'}.json`, `${JSON.stringify(report, null, 2)}\n`);
}
