import pino from 'pino';
import type { HeaderObject, OpenAPIObject, ResponseObject, SchemaObject } from 'openapi3-ts/oas30';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CONSISTENCY_HEADER, REVISION_HEADER, type KeyScope } from '../../contract/index.ts';
import { AuthorizationEngine } from '../../src/engine/engine.ts';
import { createApp } from '../../src/http/app.ts';
import { createLimits } from '../../src/rate-limits.ts';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { createServices } from '../../src/runtime.ts';
import { sweepChanges } from '../../src/store/revisions.ts';
import { client, databaseUrl, DOCUMENT_NAMESPACE, listen, newTenant, useApp, type TestTenant } from '../helpers.ts';
import { dereferencedDocument, operationsOf, SchemaValidator, type DocumentOperation } from './support.ts';

// Walks every operation of generated/openapi.json against a real server on a socket, and checks
// each real response against the document: the status is one the operation documents, the
// content type is the documented one, the body conforms to the documented schema (objects closed:
// an undocumented field fails), the documented headers are there. Then checks that every status
// and every problem type the document promises was actually seen, but for 500 (a bug).

const UNREACHABLE_STATUSES = new Set(['500']);

/** A key lacking the scope each operation requires. */
const LACKING: Record<KeyScope, KeyScope> = {
  'check:read': 'grant:read',
  'grant:read': 'check:read',
  'grant:write': 'grant:read',
  admin: 'grant:write',
};

interface Request {
  params?: Record<string, string>;
  query?: Record<string, string | number>;
  body?: unknown;
  raw?: { contentType: string; data: string };
  /** The bearer key; null for none. The tenant's admin key by default. */
  key?: string | null;
  /** Another server than the walked one. */
  baseUrl?: string;
  headers?: Record<string, string>;
}

interface Observed {
  status: number;
  contentType: string | null;
  headers: Headers;
  text: string;
  body: unknown;
}

// Every operation is called with an unknown key in a burst: more failed authentications a second than the default limit.
const { services, app } = useApp({ authFailureLimit: 100_000 });
// The same app over a database that does not answer: every operation is 503 `unavailable`.
const deadServices = createServices(
  'postgres://postgres@127.0.0.1:9/unreachable',
  { ...DEFAULT_CONFIG, GRANTD_DB_POOL_SIZE: 1 },
  pino({ level: 'silent' }),
);
const deadApp = createApp(deadServices);
// And over this run's database with a work budget of one step a check, listing by candidates: checks past it are 422.
const tightServices = createServices(databaseUrl(), { ...DEFAULT_CONFIG, GRANTD_DB_POOL_SIZE: 2, GRANTD_CHECK_BUDGET: 1 }, pino({ level: 'silent' }));
const tightApp = createApp({
  ...tightServices,
  engine: new AuthorizationEngine(tightServices.engine.checker, { listingBudget: 0, maxListingBudget: 0 }),
});
// And with every key limited to one request in a window that cannot end during the walk, whatever the machine's speed.
const limits = createLimits({ perKey: 1, windowSeconds: 3600 }, pino({ level: 'silent' }));
const limitedApp = createApp({ ...services, limits });

let document: OpenAPIObject;
/** The operations that take an API key: all but the OAuth protocol's, which test/oauth drives through OAuth clients. */
let operations: Map<string, DocumentOperation>;
let tenant: TestTenant;
let server: Awaited<ReturnType<typeof listen>>;
let deadServer: Awaited<ReturnType<typeof listen>>;
let limitedServer: Awaited<ReturnType<typeof listen>>;
let tightServer: Awaited<ReturnType<typeof listen>>;
const validator = new SchemaValidator();
/** operationId -> "status" and "status type" seen and conforming. */
const seen = new Map<string, Set<string>>();

beforeAll(async () => {
  document = await dereferencedDocument();
  operations = new Map(
    operationsOf(document)
      .filter((o) => o.operation['x-required-scope'])
      .map((o) => [o.operationId, o]),
  );
  server = await listen(app);
  deadServer = await listen(deadApp);
  limitedServer = await listen(limitedApp);
  tightServer = await listen(tightApp);
});

// Each test walks a tenant of its own, given what it needs by `given` (not through the walk's own calls).
beforeEach(async () => {
  tenant = await newTenant(services);
});

/** What a test of the walk finds in its tenant before it begins: each level adds to the one before. */
type Given = 'namespaces' | 'agents' | 'grants';

async function given(level: Given): Promise<void> {
  const api = client(app, tenant.adminKey);
  for (const namespace of [DOCUMENT_NAMESPACE, { name: 'folder', relations: { viewer: {} } }, { name: 'team' }]) {
    await api.post('/v1/namespaces', namespace).expect(201);
  }
  if (level === 'namespaces') return;
  await api.post('/v1/agents', { external_id: 'walk-bot', display_name: 'Walk bot', owner: 'user:alice', scope: ['document:viewer'] }).expect(201);
  await api.post('/v1/agents', { external_id: 'plain-bot', scope: [] }).expect(201);
  if (level === 'agents') return;
  const grants = [
    { subject: 'user:alice', relation: 'owner', object: 'document:walk1' },
    { subject: 'agent:walk-bot', relation: 'member', object: 'user:alice' },
    { subject: 'folder:f1', relation: 'parent', object: 'document:walk2' },
    { subject: 'user:bob', relation: 'viewer', object: 'folder:f1' },
    { subject: 'user:alice', relation: 'viewer', object: 'document:walk5' },
    { subject: 'user:carol', relation: 'editor', object: 'document:walk3' },
  ];
  await api.post('/v1/grants/batch', { writes: grants }).expect(200);
}

afterAll(async () => {
  await server?.close();
  await deadServer?.close();
  await limitedServer?.close();
  await tightServer?.close();
  await tightServices.close();
  await deadServices.close().catch(() => undefined);
  await limits.close();
});

function operation(operationId: string): DocumentOperation {
  const found = operations.get(operationId);
  if (!found) throw new Error(`${operationId} is not in generated/openapi.json`);
  return found;
}

/** Sends the request to the operation and checks the response against the document. */
async function call(operationId: string, request: Request = {}): Promise<Observed> {
  const op = operation(operationId);
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = request.params?.[name];
    if (value === undefined) throw new Error(`${operationId}: no value for the path parameter ${name}`);
    return encodeURIComponent(value);
  });
  const url = new URL(path, request.baseUrl ?? server.baseUrl);
  for (const [k, v] of Object.entries(request.query ?? {})) url.searchParams.set(k, String(v));
  const headers: Record<string, string> = { ...request.headers };
  const key = request.key === undefined ? tenant.adminKey : request.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (request.raw) {
    headers['content-type'] = request.raw.contentType;
    body = request.raw.data;
  } else if (request.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(request.body);
  }
  const res = await fetch(url, { method: op.method.toUpperCase(), headers, body });
  const text = await res.text();
  const contentType = res.headers.get('content-type');
  const observed: Observed = { status: res.status, contentType, headers: res.headers, text, body: text ? safeJson(text) : undefined };
  conform(op, observed);
  return observed;
}

const safeJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

function conform(op: DocumentOperation, observed: Observed): void {
  const where = `${op.method.toUpperCase()} ${op.path} (${op.operationId}) answered ${observed.status} ${observed.text.slice(0, 300)}`;
  const response = op.operation.responses[String(observed.status)] as ResponseObject | undefined;
  expect(response, `${where}: a status the document does not list`).toBeDefined();
  const content = response!.content ?? {};
  const types = Object.keys(content);
  if (types.length === 0) {
    expect(observed.text, `${where}: the document says no body`).toBe('');
  } else {
    const mediaType = observed.contentType?.split(';')[0]!.trim();
    expect(types, `${where}: content type ${observed.contentType} is not documented`).toContain(mediaType);
    const media = content[mediaType!]!;
    expect(validator.errors(media.schema as SchemaObject, observed.body, true), `${where}: the body does not conform`).toEqual([]);
  }
  for (const name of Object.keys(response!.headers ?? {})) {
    const header = response!.headers![name] as HeaderObject;
    expect(observed.headers.get(name), `${where}: the documented header ${name} is missing`).not.toBeNull();
    if ((header.schema as SchemaObject | undefined)?.type === 'integer') expect(observed.headers.get(name)).toMatch(/^\d+$/);
  }
  const marks = seen.get(op.operationId) ?? new Set<string>();
  marks.add(String(observed.status));
  const problemType = (observed.body as { type?: unknown } | undefined)?.type;
  if (observed.status >= 400 && typeof problemType === 'string') marks.add(`${observed.status} ${problemType}`);
  seen.set(op.operationId, marks);
}

/** Calls and expects a status (and for problems, a type): the walk does what it means to. */
async function expectCall(operationId: string, request: Request, status: number, problemType?: string): Promise<Observed> {
  const observed = await call(operationId, request);
  expect(observed.status, `${operationId} ${JSON.stringify(request.body ?? request.query ?? request.params ?? {})}: ${observed.text}`).toBe(status);
  if (problemType) expect((observed.body as { type: string }).type).toBe(problemType);
  return observed;
}

/** Path parameters that name nothing in particular, for the problems every operation shares. */
const ANY_PARAMS = { external_id: 'nobody', id: 'key_nothing', client_id: 'oc_nothing', name: 'nothing' };
/** A body each operation accepts, or at least parses, for the shared problems. */
const triple = { subject: 'user:alice', relation: 'viewer', object: 'document:walk1' };

describe('every operation of the document against the server', () => {
  it('answers 401 unauthenticated without a key and with an unknown one', async () => {
    for (const { operationId } of operations.values()) {
      await expectCall(operationId, { params: ANY_PARAMS, key: null }, 401, 'unauthenticated');
      await expectCall(operationId, { params: ANY_PARAMS, key: `svc_live_${'x'.repeat(43)}` }, 401, 'unauthenticated');
    }
  });

  it('answers 403 insufficient-scope to a key without the required scope', async () => {
    for (const { operationId, operation: op } of operations.values()) {
      const key = await tenant.keyWith(LACKING[op['x-required-scope'] as KeyScope]);
      await expectCall(operationId, { params: ANY_PARAMS, key }, 403, 'insufficient-scope');
    }
  });

  it('answers 503 unavailable with Retry-After when the database is unreachable', async () => {
    for (const { operationId } of operations.values()) {
      const res = await expectCall(operationId, { params: ANY_PARAMS, baseUrl: deadServer.baseUrl }, 503, 'unavailable');
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    }
  }, 60_000);

  it('answers 429 rate-limited with Retry-After to a key past its rate limit', async () => {
    for (const { operationId } of operations.values()) {
      const key = await tenant.keyWith('admin'); // a bucket of its own
      await call(operationId, { params: ANY_PARAMS, key, baseUrl: limitedServer.baseUrl });
      const res = await expectCall(operationId, { params: ANY_PARAMS, key, baseUrl: limitedServer.baseUrl }, 429, 'rate-limited');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
  });

  it('answers 415 to a body that is not JSON, 413 to one over 1 MiB, 400 to malformed JSON', async () => {
    for (const { operationId, operation: op } of operations.values()) {
      if (!op.requestBody) continue;
      await expectCall(operationId, { params: ANY_PARAMS, raw: { contentType: 'text/plain', data: 'hello' } }, 415, 'unsupported-media-type');
      await expectCall(
        operationId,
        { params: ANY_PARAMS, raw: { contentType: 'application/json', data: JSON.stringify({ pad: 'x'.repeat(1_100_000) }) } },
        413,
        'payload-too-large',
      );
      await expectCall(operationId, { params: ANY_PARAMS, raw: { contentType: 'application/json', data: '{"subject": ' } }, 400, 'invalid-request');
    }
  });

  it('namespacesCreate and namespacesList', async () => {
    await expectCall('namespacesCreate', { body: DOCUMENT_NAMESPACE }, 201);
    await expectCall('namespacesCreate', { body: { name: 'folder', relations: { viewer: {} } } }, 201);
    await expectCall('namespacesCreate', { body: { name: 'team' } }, 201);
    await expectCall('namespacesCreate', { body: DOCUMENT_NAMESPACE }, 409, 'namespace-exists');
    await expectCall('namespacesCreate', { body: { name: 'Bad' } }, 400, 'invalid-request');
    await expectCall('namespacesCreate', { body: { name: 'broken', relations: { a: { includes: ['b'] } } } }, 400, 'invalid-namespace');
    const list = await expectCall('namespacesList', {}, 200);
    expect((list.body as { namespaces: { name: string }[] }).namespaces.map((n) => n.name)).toEqual(['agent', 'document', 'folder', 'team', 'user']);
  });

  it('namespacesGet, namespacesUpdate and namespacesDelete', async () => {
    await given('grants');
    await expectCall('namespacesGet', { params: { name: 'document' } }, 200);
    await expectCall('namespacesGet', { params: { name: 'invoice' } }, 404, 'namespace-not-found');
    await expectCall('namespacesGet', { params: { name: 'Bad' } }, 400, 'invalid-request');
    const relations = { ...DOCUMENT_NAMESPACE.relations, approver: { includes: ['owner'] } };
    await expectCall('namespacesUpdate', { params: { name: 'document' }, body: { relations } }, 200);
    await expectCall('namespacesUpdate', { params: { name: 'document' }, body: { relations: { owner: {} } } }, 409, 'namespace-in-use');
    await expectCall('namespacesUpdate', { params: { name: 'document' }, body: { relations: { a: { includes: ['b'] } } } }, 400, 'invalid-namespace');
    await expectCall('namespacesUpdate', { params: { name: 'document' }, body: { name: 'document' } }, 400, 'invalid-request');
    await expectCall('namespacesUpdate', { params: { name: 'invoice' }, body: {} }, 404, 'namespace-not-found');
    await expectCall('namespacesDelete', { params: { name: 'folder' } }, 409, 'namespace-in-use');
    await expectCall('namespacesDelete', { params: { name: 'user' } }, 400, 'invalid-namespace');
    await expectCall('namespacesDelete', { params: { name: 'Bad' } }, 400, 'invalid-request');
    await expectCall('namespacesDelete', { params: { name: 'team' } }, 204);
    await expectCall('namespacesDelete', { params: { name: 'team' } }, 404, 'namespace-not-found');
  });

  it('agentsCreate, agentsList, agentsGet', async () => {
    await given('namespaces');
    await expectCall(
      'agentsCreate',
      { body: { external_id: 'walk-bot', display_name: 'Walk bot', owner: 'user:alice', scope: ['document:viewer'] } },
      201,
    );
    await expectCall('agentsCreate', { body: { external_id: 'plain-bot', scope: [] } }, 201);
    await expectCall('agentsCreate', { body: { external_id: 'walk-bot', scope: [] } }, 409, 'agent-exists');
    await expectCall('agentsCreate', { body: { external_id: 'x' } }, 400, 'invalid-request');
    await expectCall('agentsCreate', { body: { external_id: 'y', owner: 'team:core', scope: [] } }, 400, 'invalid-subject');
    const page = await expectCall('agentsList', { query: { limit: 1 } }, 200);
    const cursor = (page.body as { next_cursor: string }).next_cursor;
    expect(cursor).toEqual(expect.any(String));
    await expectCall('agentsList', { query: { limit: 1, cursor } }, 200);
    await expectCall('agentsList', { query: { limit: 0 } }, 400, 'invalid-request');
    await expectCall('agentsList', { query: { cursor: 'bogus.cursor' } }, 400, 'invalid-cursor');
    await expectCall('agentsGet', { params: { external_id: 'walk-bot' } }, 200);
    await expectCall('agentsGet', { params: { external_id: 'plain-bot' } }, 200);
    await expectCall('agentsGet', { params: { external_id: 'ghost' } }, 404, 'agent-not-found');
    await expectCall('agentsGet', { params: { external_id: 'not an id' } }, 400, 'invalid-request');
  });

  it('grantsCreate, grantsBatch, grantsList, grantsRevoke', async () => {
    await given('agents');
    await expectCall('grantsCreate', { body: { subject: 'user:alice', relation: 'owner', object: 'document:walk1' } }, 201);
    await expectCall('grantsCreate', { body: { subject: 'user:alice', relation: 'owner', object: 'document:walk1' } }, 200);
    await expectCall('grantsCreate', { body: { subject: 'agent:walk-bot', relation: 'member', object: 'user:alice' } }, 201);
    await expectCall('grantsCreate', { body: { subject: 'folder:f1', relation: 'parent', object: 'document:walk2' } }, 201);
    await expectCall('grantsCreate', { body: { subject: 'user:bob', relation: 'viewer', object: 'folder:f1' } }, 201);
    await expectCall('grantsCreate', { body: { subject: 'user:alice', relation: 'viewer', object: 'document:walk5' } }, 201);
    await expectCall('grantsCreate', { body: { subject: 'user:alice', relation: 'owner' } }, 400, 'invalid-request');
    await expectCall('grantsCreate', { body: { ...triple, subject: 'alice' } }, 400, 'invalid-subject');
    await expectCall('grantsCreate', { body: { ...triple, object: 'walk1' } }, 400, 'invalid-object');
    await expectCall('grantsCreate', { body: { ...triple, relation: 'approver' } }, 400, 'unknown-relation');
    await expectCall('grantsCreate', { body: { ...triple, object: 'invoice:1' } }, 404, 'namespace-not-found');
    await expectCall('grantsCreate', { body: { ...triple, subject: 'agent:ghost' } }, 404, 'agent-not-found');

    const batch = {
      writes: [
        { subject: 'user:carol', relation: 'editor', object: 'document:walk3' },
        { subject: 'user:carol', relation: 'viewer', object: 'document:walk4' },
      ],
      deletes: [{ subject: 'user:nobody', relation: 'viewer', object: 'document:walk1' }],
    };
    const applied = await expectCall('grantsBatch', { body: batch }, 200);
    expect(applied.body).toEqual({ written: 2, deleted: 0 });
    await expectCall('grantsBatch', { body: {} }, 400, 'invalid-request');
    await expectCall('grantsBatch', { body: { writes: [{ ...triple, subject: 'alice' }] } }, 400, 'invalid-subject');
    await expectCall('grantsBatch', { body: { writes: [{ ...triple, object: 'walk1' }] } }, 400, 'invalid-object');
    await expectCall('grantsBatch', { body: { writes: [{ ...triple, relation: 'approver' }] } }, 400, 'unknown-relation');
    await expectCall('grantsBatch', { body: { writes: [{ ...triple, object: 'invoice:1' }] } }, 404, 'namespace-not-found');
    await expectCall('grantsBatch', { body: { writes: [{ ...triple, subject: 'agent:ghost' }] } }, 404, 'agent-not-found');

    const first = await expectCall('grantsList', { query: { namespace: 'document', limit: 1 } }, 200);
    const cursor = (first.body as { next_cursor: string }).next_cursor;
    expect(cursor).toEqual(expect.any(String));
    await expectCall('grantsList', { query: { namespace: 'document', limit: 1, cursor } }, 200);
    await expectCall('grantsList', { query: { subject: 'user:alice', relation: 'owner', object: 'document:walk1' } }, 200);
    await expectCall('grantsList', {}, 200);
    await expectCall('grantsList', { query: { limit: 'many' } }, 400, 'invalid-request');
    await expectCall('grantsList', { query: { subject: 'alice' } }, 400, 'invalid-subject');
    await expectCall('grantsList', { query: { object: 'walk1' } }, 400, 'invalid-object');
    await expectCall('grantsList', { query: { namespace: 'folder', cursor } }, 400, 'invalid-cursor');

    await expectCall('grantsRevoke', { body: { subject: 'user:carol', relation: 'viewer', object: 'document:walk4' } }, 204);
    await expectCall('grantsRevoke', { body: { subject: 'user:carol', relation: 'viewer', object: 'document:walk4' } }, 204);
    await expectCall('grantsRevoke', { query: { subject: 'user:carol', relation: 'viewer', object: 'document:walk4' } }, 204);
    await expectCall('grantsRevoke', { query: { subject: 'user:carol' } }, 400, 'invalid-request');
    await expectCall('grantsRevoke', { body: { subject: 'user:carol' } }, 400, 'invalid-request');
    await expectCall('grantsRevoke', { body: { ...triple, subject: 'carol' } }, 400, 'invalid-subject');
    await expectCall('grantsRevoke', { body: { ...triple, object: 'walk4' } }, 400, 'invalid-object');
  });

  it('check and checkBulk', async () => {
    await given('grants');
    const allowed = await expectCall('check', { body: { subject: 'user:alice', relation: 'viewer', object: 'document:walk1' } }, 200);
    expect(allowed.body).toEqual({ allowed: true });
    const inherited = await expectCall('check', { body: { subject: 'user:bob', relation: 'viewer', object: 'document:walk2' } }, 200);
    expect(inherited.body).toEqual({ allowed: true });
    await expectCall('check', { body: { subject: 'user:alice', object: 'document:walk1' } }, 400, 'invalid-request');
    await expectCall('check', { body: { ...triple, subject: 'alice' } }, 400, 'invalid-subject');
    await expectCall('check', { body: { ...triple, object: 'walk1' } }, 400, 'invalid-object');
    await expectCall('check', { body: { ...triple, relation: 'approver' } }, 400, 'unknown-relation');
    await expectCall('check', { body: { ...triple, object: 'invoice:1' } }, 404, 'namespace-not-found');

    const bulk = await expectCall(
      'checkBulk',
      {
        body: {
          checks: [
            { subject: 'user:alice', relation: 'viewer', object: 'document:walk1' },
            { subject: 'agent:walk-bot', relation: 'viewer', object: 'document:walk1' },
            { subject: 'user:alice', relation: 'viewer', object: 'invoice:1' },
            { subject: 'user:alice', relation: 'approver', object: 'document:walk1' },
          ],
        },
      },
      200,
    );
    expect((bulk.body as { results: { allowed: boolean; error?: { type: string } }[] }).results.map((r) => r.error?.type ?? r.allowed)).toEqual([
      true,
      true,
      'namespace-not-found',
      'unknown-relation',
    ]);
    await expectCall('checkBulk', { body: { checks: [] } }, 400, 'invalid-request');
    await expectCall('checkBulk', { body: { checks: [{ ...triple, subject: 'alice' }] } }, 400, 'invalid-subject');
    await expectCall('checkBulk', { body: { checks: [{ ...triple, object: 'walk1' }] } }, 400, 'invalid-object');
  });

  it('objectsList', async () => {
    await given('grants');
    const query = { namespace: 'document', subject: 'user:alice', relation: 'viewer' };
    const first = await expectCall('objectsList', { query: { ...query, limit: 1 } }, 200);
    expect(first.body).toEqual({ namespace: 'document', objects: ['walk1'], next_cursor: expect.any(String) });
    const cursor = (first.body as { next_cursor: string }).next_cursor;
    const rest = await expectCall('objectsList', { query: { ...query, cursor } }, 200);
    expect(rest.body).toEqual({ namespace: 'document', objects: ['walk5'], next_cursor: null });
    await expectCall('objectsList', { query: { ...query, limit: 1001 } }, 400, 'invalid-request');
    await expectCall('objectsList', { query: { ...query, subject: 'alice' } }, 400, 'invalid-subject');
    await expectCall('objectsList', { query: { ...query, relation: 'approver' } }, 400, 'unknown-relation');
    await expectCall('objectsList', { query: { ...query, relation: 'editor', cursor } }, 400, 'invalid-cursor');
    await expectCall('objectsList', { query: { ...query, namespace: 'invoice' } }, 404, 'namespace-not-found');
  });

  it('check, checkBulk and objectsList past the work budget of a check', async () => {
    await given('grants');
    // A viewer check starts from three pairs (viewer, editor, owner): past a budget of one step, unless found there.
    const tight = { baseUrl: tightServer.baseUrl };
    await expectCall('check', { ...tight, body: { subject: 'user:carol', relation: 'viewer', object: 'document:walk2' } }, 422, 'check-too-complex');
    const bulk = await expectCall(
      'checkBulk',
      { ...tight, body: { checks: [{ subject: 'user:carol', relation: 'viewer', object: 'document:walk2' }] } },
      200,
    );
    expect((bulk.body as { results: unknown[] }).results).toEqual([
      { allowed: false, error: { type: 'check-too-complex', detail: expect.any(String) } },
    ]);
    // Listed by candidates, one of which cannot be decided within the budget.
    const query = { namespace: 'document', subject: 'user:alice', relation: 'viewer' };
    await expectCall('objectsList', { ...tight, query }, 422, 'check-too-complex');
  });

  it('explain and subjectsList', async () => {
    await given('grants');
    const tight = { baseUrl: tightServer.baseUrl };
    const explained = await expectCall('explain', { body: { subject: 'user:alice', relation: 'viewer', object: 'document:walk1' } }, 200);
    expect(explained.body).toMatchObject({ allowed: true, reason: null });
    await expectCall('explain', { body: { subject: 'user:alice', relation: 'viewer', object: 'invoice:x' } }, 404, 'namespace-not-found');
    await expectCall(
      'explain',
      { ...tight, body: { subject: 'user:carol', relation: 'viewer', object: 'document:walk2' } },
      422,
      'check-too-complex',
    );

    const query = { object: 'document:walk1', relation: 'viewer', subject_namespace: 'user' };
    const listed = await expectCall('subjectsList', { query }, 200);
    expect(listed.body).toEqual({ object: 'document:walk1', relation: 'viewer', subjects: ['user:alice'], next_cursor: null });
    await expectCall('subjectsList', { query: { ...query, object: 'invoice:x' } }, 404, 'namespace-not-found');
    await expectCall('subjectsList', { ...tight, query }, 422, 'check-too-complex');
  });

  it('agentsDelete', async () => {
    await given('grants');
    const removed = await expectCall('agentsDelete', { params: { external_id: 'walk-bot' } }, 200);
    expect(removed.body).toEqual({ external_id: 'walk-bot', grants_removed: 1, clients_removed: 0 });
    await expectCall('agentsDelete', { params: { external_id: 'walk-bot' } }, 404, 'agent-not-found');
    await expectCall('agentsDelete', { params: { external_id: 'not an id' } }, 400, 'invalid-request');
  });

  it('keysCreate, keysList, keysRevoke', async () => {
    const created = await expectCall('keysCreate', { body: { label: 'walk', scopes: ['check:read', 'grant:read'] } }, 201);
    await expectCall('keysCreate', { body: {} }, 201);
    await expectCall('keysCreate', { body: { scopes: [] } }, 400, 'invalid-request');
    await expectCall('keysList', {}, 200);
    await expectCall('keysList', { query: { limit: 1 } }, 400, 'invalid-request');
    const { id } = created.body as { id: string };
    await expectCall('keysRevoke', { params: { id } }, 204);
    await expectCall('keysRevoke', { params: { id } }, 404, 'key-not-found');
  });

  it('oauthClientsCreate, oauthClientsList, oauthClientsDelete', async () => {
    await expectCall('agentsCreate', { body: { external_id: 'oauth-bot', scope: ['document:viewer'] } }, 201);
    const created = await expectCall(
      'oauthClientsCreate',
      { body: { name: 'walk', type: 'confidential', scopes: ['check:read'], agent: 'oauth-bot' } },
      201,
    );
    await expectCall(
      'oauthClientsCreate',
      { body: { name: 'spa', type: 'public', scopes: ['check:read'], redirect_uris: ['https://app.example/cb'] } },
      201,
    );
    await expectCall('oauthClientsCreate', { body: { name: 'spa', type: 'public', scopes: ['check:read'] } }, 400, 'invalid-request');
    await expectCall(
      'oauthClientsCreate',
      { body: { name: 'ghost', type: 'confidential', scopes: ['check:read'], agent: 'ghost' } },
      404,
      'agent-not-found',
    );
    await expectCall('oauthClientsList', {}, 200);
    await expectCall('oauthClientsList', { query: { x: 1 } }, 400, 'invalid-request');
    const { client_id } = created.body as { client_id: string };
    await expectCall('oauthClientsDelete', { params: { client_id } }, 204);
    await expectCall('oauthClientsDelete', { params: { client_id } }, 404, 'client-not-found');
    await expectCall('oauthClientsDelete', { params: { client_id: 'c'.repeat(129) } }, 400, 'invalid-request');
  });

  it('reads take Grantd-Consistency: a revision this server did not issue is 400 invalid-revision, a malformed header 400 invalid-request', async () => {
    await given('namespaces');
    const reads = [...operations.values()].filter(({ operation: op }) =>
      (op.parameters ?? []).some((p) => 'name' in p && p.name === CONSISTENCY_HEADER),
    );
    expect(reads.length).toBeGreaterThan(5);
    for (const { operationId } of reads) {
      await expectCall(
        operationId,
        { params: ANY_PARAMS, headers: { [CONSISTENCY_HEADER]: 'at-least WyIxIiwiMSJd.forged' } },
        400,
        'invalid-revision',
      );
    }
    await expectCall('namespacesList', { headers: { [CONSISTENCY_HEADER]: 'latest' } }, 400, 'invalid-request');
    const written = await expectCall('namespacesCreate', { body: { name: 'walked' } }, 201);
    const revision = written.headers.get(REVISION_HEADER)!;
    await expectCall('namespacesList', { headers: { [CONSISTENCY_HEADER]: `at-least ${revision}` } }, 200);
    await expectCall('namespacesGet', { params: { name: 'walked' }, headers: { [CONSISTENCY_HEADER]: 'full' } }, 200);
  });

  it('changesList', async () => {
    await given('namespaces');
    const first = await expectCall('changesList', { query: { limit: 1 } }, 200);
    const after = (first.body as { next_revision: string }).next_revision;
    await expectCall('changesList', { query: { after } }, 200);
    await expectCall('changesList', { query: { limit: 0 } }, 400, 'invalid-request');
    await expectCall('changesList', { query: { after: 'WyIxIiwiMSJd.forged' } }, 400, 'invalid-revision');
    // The tenant's changes aged past the retention, then swept: `after` older than what is kept is gone.
    await services.db.$executeRaw`UPDATE changes SET at = at - interval '8 days' WHERE tenant_id = ${tenant.id}::uuid`;
    await sweepChanges(services.db, 7 * 86_400_000, new Date(), 1_000_000);
    await expectCall('changesList', { query: { after } }, 410, 'changes-expired');
  });

  it('keysRevoke answers an over-long id with a documented 400 invalid-request', async () => {
    await expectCall('keysRevoke', { params: { id: 'k'.repeat(129) } }, 400, 'invalid-request');
  });

  it('saw every documented status and problem type of every operation', ({ task, skip }) => {
    const walked = task.suite?.tasks.filter((other) => other !== task) ?? [];
    if (walked.some((other) => other.mode !== 'run')) skip('only the whole walk sees every status');
    const missing: string[] = [];
    for (const { operationId, operation: op } of operations.values()) {
      const marks = seen.get(operationId) ?? new Set<string>();
      for (const [status, response] of Object.entries(op.responses)) {
        if (UNREACHABLE_STATUSES.has(status)) continue;
        if (!marks.has(status)) missing.push(`${operationId} ${status}`);
        const schema = (response as ResponseObject).content?.['application/problem+json']?.schema as SchemaObject | undefined;
        for (const type of ((schema?.properties?.type as SchemaObject | undefined)?.enum ?? []) as string[]) {
          if (!marks.has(`${status} ${type}`)) missing.push(`${operationId} ${status} ${type}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
