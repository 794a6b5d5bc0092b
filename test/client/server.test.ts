import { beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  NetworkError,
  ProblemError,
  ServiceError,
  TimeoutError,
  UnexpectedResponseError,
  type FetchLike,
  type GrantdClient,
} from '../../src/client/index.ts';
import { createApp } from '../../src/http/app.ts';
import { DOCUMENT_NAMESPACE, listen, newTenant, useServices, type TestTenant } from '../helpers.ts';
import { failure, useRealServer } from './support.ts';

// Every client method against the real grantd app on a real socket.
const server = useRealServer();
let tenant: TestTenant;
let grantd: GrantdClient;
const TIMESTAMP = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
/** What every write resolves with beside its body (docs/consistency.md#revisions). */
const REVISION = expect.any(String);

/** A client that counts the HTTP requests it makes. */
function counting(apiKey: string) {
  const requests: string[] = [];
  const fetchCounting: FetchLike = (input, init) => {
    requests.push(`${init.method} ${new URL(input).pathname}${new URL(input).search}`);
    return fetch(input, init);
  };
  return { client: createClient({ apiKey, baseUrl: server.url, fetch: fetchCounting }), requests };
}

async function problemOf(call: () => Promise<unknown>): Promise<ProblemError> {
  const { error } = await failure(call);
  expect(error).toBeInstanceOf(ProblemError);
  expect(error).toBeInstanceOf(ServiceError);
  expect(error).toBeInstanceOf(Error);
  return error as ProblemError;
}

beforeAll(async () => {
  tenant = await newTenant(server.services);
  grantd = createClient({ apiKey: tenant.adminKey, baseUrl: server.url });
});

describe('namespaces', () => {
  it('create returns the namespace record; list returns { namespaces }', async () => {
    const created = await grantd.namespaces.create(DOCUMENT_NAMESPACE);
    expect(created).toEqual({ ...DOCUMENT_NAMESPACE, created_at: TIMESTAMP, updated_at: created.created_at, revision: REVISION });
    expect(await grantd.namespaces.create({ name: 'folder' })).toEqual({
      name: 'folder',
      relations: null,
      created_at: TIMESTAMP,
      updated_at: TIMESTAMP,
      revision: REVISION,
    });
    expect(await grantd.namespaces.create({ name: 'team', relations: { member: {} } })).toMatchObject({ name: 'team' });
    const { namespaces } = await grantd.namespaces.list();
    expect(namespaces.map((n) => n.name)).toEqual(['agent', 'document', 'folder', 'team', 'user']);
  });

  it('get, update and delete one namespace; their refusals are ProblemErrors', async () => {
    expect(await grantd.namespaces.get('document')).toMatchObject(DOCUMENT_NAMESPACE);
    const updated = await grantd.namespaces.update('team', { relations: { member: {}, admin: {} } });
    const { revision, ...body } = updated;
    expect(revision).toEqual(REVISION);
    expect(body).toEqual({ name: 'team', relations: { member: {}, admin: {} }, created_at: TIMESTAMP, updated_at: TIMESTAMP });
    expect(await grantd.namespaces.get('team')).toEqual(body);
    await grantd.grants.create({ subject: 'user:alice', relation: 'admin', object: 'team:eng' });
    const inUse = await problemOf(() => grantd.namespaces.update('team', { relations: { member: {} } }));
    expect(inUse).toMatchObject({ type: 'namespace-in-use', status: 409, detail: expect.stringContaining('admin (1 grant)') });
    expect(await problemOf(() => grantd.namespaces.delete('team'))).toMatchObject({ type: 'namespace-in-use', status: 409 });
    await grantd.grants.revoke({ subject: 'user:alice', relation: 'admin', object: 'team:eng' });
    await expect(grantd.namespaces.delete('team')).resolves.toEqual({ revision: REVISION });
    expect(await problemOf(() => grantd.namespaces.get('team'))).toMatchObject({ type: 'namespace-not-found', status: 404 });
    expect(await problemOf(() => grantd.namespaces.update('user', {}))).toMatchObject({ type: 'invalid-namespace', status: 400 });
    await grantd.namespaces.create({ name: 'team', relations: { member: {} } });
  });

  it('create of an existing name throws ProblemError namespace-exists 409', async () => {
    const error = await problemOf(() => grantd.namespaces.create({ name: 'document' }));
    expect(error).toMatchObject({ type: 'namespace-exists', status: 409, title: 'Namespace exists', attempts: 1 });
    expect(error.detail).toEqual(expect.any(String));
    expect(error.requestId).toEqual(expect.any(String));
    expect(error.message).toContain(error.detail);
  });

  it('an invalid definition throws invalid-request with the validation errors', async () => {
    const error = await problemOf(() => grantd.namespaces.create({ name: 'Bad' }));
    expect(error).toMatchObject({ type: 'invalid-request', status: 400 });
    expect(error.errors).toEqual([{ path: 'body.name', message: expect.any(String) }]);
    const cyclic = await problemOf(() => grantd.namespaces.create({ name: 'loop', relations: { a: { includes: ['a'] } } }));
    expect(cyclic).toMatchObject({
      type: 'invalid-namespace',
      status: 400,
      errors: [{ path: 'relations.a.includes[0]', message: expect.any(String) }],
    });
  });
});

describe('check, checkBulk and grants', () => {
  const alice = { subject: 'user:alice', relation: 'owner', object: 'document:q3' };

  it('check answers { allowed } before and after grants.create, which is idempotent', async () => {
    expect(await grantd.check({ ...alice, relation: 'viewer' })).toEqual({ allowed: false });
    const grant = await grantd.grants.create(alice);
    expect(grant).toEqual({ ...alice, created_at: TIMESTAMP, not_before: null, expires_at: null, revision: REVISION });
    expect(await grantd.grants.create(alice)).toEqual({ ...grant, revision: REVISION });
    expect(await grantd.check({ ...alice, relation: 'viewer' })).toEqual({ allowed: true });
  });

  it('check of an unknown namespace throws namespace-not-found 404', async () => {
    const error = await problemOf(() => grantd.check({ subject: 'user:alice', relation: 'viewer', object: 'nowhere:x' }));
    expect(error).toMatchObject({ type: 'namespace-not-found', status: 404, title: 'Namespace not found' });
    expect(error.detail).toContain('nowhere');
  });

  it('a malformed subject throws invalid-subject 400; an undeclared relation unknown-relation', async () => {
    const error = await problemOf(() => grantd.check({ subject: 'alice', relation: 'viewer', object: 'document:q3' }));
    expect(error).toMatchObject({ type: 'invalid-subject', status: 400, errors: [{ path: 'body.subject', message: expect.any(String) }] });
    const unknown = await problemOf(() => grantd.grants.create({ ...alice, relation: 'reader' }));
    expect(unknown).toMatchObject({ type: 'unknown-relation', status: 400 });
  });

  it('checkBulk answers every check in order, with per-item errors', async () => {
    const { results } = await grantd.checkBulk({
      checks: [
        { ...alice, relation: 'editor' },
        { subject: 'user:bob', relation: 'viewer', object: 'document:q3' },
        { subject: 'user:bob', relation: 'viewer', object: 'nowhere:x' },
      ],
    });
    expect(results).toEqual([
      { allowed: true },
      { allowed: false },
      { allowed: false, error: { type: 'namespace-not-found', detail: expect.any(String) } },
    ]);
  });

  it('grants.revoke resolves to its revision alone, also for an absent grant', async () => {
    const bob = { subject: 'user:bob', relation: 'viewer', object: 'document:tmp' };
    await grantd.grants.create(bob);
    expect(await grantd.check(bob)).toEqual({ allowed: true });
    await expect(grantd.grants.revoke(bob)).resolves.toEqual({ revision: REVISION });
    await expect(grantd.grants.revoke(bob)).resolves.toEqual({ revision: REVISION });
    expect(await grantd.check(bob)).toEqual({ allowed: false });
  });

  it('grants.batch writes and deletes all or nothing', async () => {
    const writes = ['b1', 'b2', 'b3'].map((id) => ({ subject: 'user:carol', relation: 'viewer', object: `document:${id}` }));
    expect(await grantd.grants.batch({ writes })).toEqual({ written: 3, deleted: 0, revision: REVISION });
    expect(await grantd.grants.batch({ writes: [writes[0]!], deletes: [writes[1]!] })).toEqual({ written: 0, deleted: 1, revision: REVISION });
    const error = await problemOf(() => grantd.grants.batch({ writes: [{ ...writes[2]!, object: 'nowhere:x' }], deletes: [writes[0]!] }));
    expect(error).toMatchObject({ type: 'namespace-not-found', status: 404 });
    expect((await grantd.grants.list({ subject: 'user:carol' })).grants.map((g) => g.object)).toEqual(['document:b1', 'document:b3']);
  });

  it('grants.list returns a page with next_cursor; grants.iterate follows it through every page', async () => {
    const dave = Array.from({ length: 7 }, (_, i) => ({ subject: 'user:dave', relation: 'viewer', object: `document:d${i}` }));
    await grantd.grants.batch({ writes: dave });
    const first = await grantd.grants.list({ subject: 'user:dave', limit: 3 });
    expect(first.grants).toHaveLength(3);
    expect(first.next_cursor).toEqual(expect.any(String));
    expect(first.grants[0]).toEqual({ ...dave[0], created_at: TIMESTAMP, not_before: null, expires_at: null });

    const { client, requests } = counting(tenant.adminKey);
    const all = [];
    for await (const grant of client.grants.iterate({ subject: 'user:dave', limit: 3 })) all.push(grant);
    expect(all.map((g) => g.object)).toEqual(dave.map((g) => g.object));
    expect(requests).toHaveLength(3); // 3 + 3 + 1
    expect(requests[0]).toBe('GET /v1/grants?subject=user%3Adave&limit=3');
    expect(requests[1]).toMatch(/^GET \/v1\/grants\?subject=user%3Adave&limit=3&cursor=/);

    // Starting from a cursor, and with no filter at all.
    const rest = [];
    for await (const grant of grantd.grants.iterate({ subject: 'user:dave', limit: 3, cursor: first.next_cursor! })) rest.push(grant.object);
    expect(rest).toEqual(dave.slice(3).map((g) => g.object));
    let count = 0;
    for await (const _ of grantd.grants.iterate()) count += 1;
    expect(count).toBe((await grantd.grants.list({ limit: 1000 })).grants.length);
  });

  it('grants.create and grants.batch take times as Dates or ISO strings; grants.list takes active', async () => {
    const fay = { subject: 'user:fay', relation: 'viewer', object: 'document:q3' };
    const later = new Date(Date.now() + 3_600_000);
    const end = new Date(Date.now() + 7_200_000);
    const created = await grantd.grants.create({ ...fay, not_before: later, expires_at: end.toISOString() });
    expect(created).toEqual({ ...fay, created_at: TIMESTAMP, not_before: later.toISOString(), expires_at: end.toISOString(), revision: REVISION });
    expect(await grantd.check(fay)).toEqual({ allowed: false });
    expect(await grantd.grants.batch({ writes: [{ ...fay, not_before: null, expires_at: end }] })).toEqual({
      written: 1,
      deleted: 0,
      revision: REVISION,
    });
    expect(await grantd.check(fay)).toEqual({ allowed: true });
    await grantd.grants.batch({ writes: [{ ...fay, object: 'document:q4', not_before: later }] });
    const listed = async (active?: boolean) =>
      (await grantd.grants.list({ subject: 'user:fay', ...(active === undefined ? {} : { active }) })).grants;
    expect((await listed()).map((g) => g.object)).toEqual(['document:q3', 'document:q4']);
    expect((await listed(true)).map((g) => [g.object, g.expires_at])).toEqual([['document:q3', end.toISOString()]]);
    const error = await problemOf(() => grantd.grants.batch({ writes: [fay, { ...fay, expires_at: new Date(0) }] }));
    expect(error).toMatchObject({
      type: 'invalid-request',
      status: 400,
      errors: [{ path: 'writes[1].expires_at', message: 'must be in the future' }],
    });
  });

  it('a cursor of another query throws invalid-cursor', async () => {
    const first = await grantd.grants.list({ subject: 'user:dave', limit: 1 });
    const error = await problemOf(() => grantd.grants.list({ subject: 'user:carol', cursor: first.next_cursor! }));
    expect(error).toMatchObject({ type: 'invalid-cursor', status: 400 });
  });
});

describe('objects', () => {
  const ids = ['o01', 'o02', 'o03', 'o04', 'o05', 'o06', 'o07', 'o08', 'o09', 'o10', 'o11'];

  beforeAll(async () => {
    await grantd.grants.batch({ writes: ids.map((id) => ({ subject: 'user:erin', relation: 'editor', object: `document:${id}` })) });
  });

  it('list returns one page and a next_cursor', async () => {
    const page = await grantd.objects.list({ namespace: 'document', subject: 'user:erin', relation: 'viewer', limit: 4 });
    expect(page).toEqual({ namespace: 'document', objects: ids.slice(0, 4), next_cursor: expect.any(String) });
    const next = await grantd.objects.list({ namespace: 'document', subject: 'user:erin', relation: 'viewer', limit: 4, cursor: page.next_cursor! });
    expect(next.objects).toEqual(ids.slice(4, 8));
  });

  it('iterate yields every object id across several pages', async () => {
    const { client, requests } = counting(tenant.adminKey);
    const seen: string[] = [];
    for await (const id of client.objects.iterate({ namespace: 'document', subject: 'user:erin', relation: 'viewer', limit: 4 })) seen.push(id);
    expect(seen).toEqual(ids);
    expect(requests).toHaveLength(3);
    expect(requests.every((r) => r.startsWith('GET /v1/objects?namespace=document&subject=user%3Aerin&relation=viewer&limit=4'))).toBe(true);
  });

  it('iterate can stop early without fetching further pages', async () => {
    const { client, requests } = counting(tenant.adminKey);
    const seen: string[] = [];
    for await (const id of client.objects.iterate({ namespace: 'document', subject: 'user:erin', relation: 'viewer', limit: 4 })) {
      seen.push(id);
      if (seen.length === 2) break;
    }
    expect(seen).toEqual(ids.slice(0, 2));
    expect(requests).toHaveLength(1);
  });

  it('iterate of nothing yields nothing; an unknown namespace rejects the iteration', async () => {
    const none: string[] = [];
    for await (const id of grantd.objects.iterate({ namespace: 'document', subject: 'user:nobody', relation: 'viewer' })) none.push(id);
    expect(none).toEqual([]);
    const error = await problemOf(async () => {
      for await (const _ of grantd.objects.iterate({ namespace: 'nowhere', subject: 'user:erin', relation: 'viewer' })) {
        // never reached
      }
    });
    expect(error).toMatchObject({ type: 'namespace-not-found', status: 404 });
  });

  it('a bad limit throws invalid-request', async () => {
    const error = await problemOf(() => grantd.objects.list({ namespace: 'document', subject: 'user:erin', relation: 'viewer', limit: 5000 }));
    expect(error).toMatchObject({ type: 'invalid-request', status: 400, errors: [{ path: 'query.limit', message: expect.any(String) }] });
  });
});

describe('subjects and explain', () => {
  const readers = ['user:r1', 'user:r2', 'user:r3', 'user:r4', 'user:r5'];
  const query = { object: 'document:shared', relation: 'viewer', subject_namespace: 'user', limit: 2 };

  beforeAll(async () => {
    await grantd.grants.batch({ writes: readers.map((subject) => ({ subject, relation: 'viewer', object: 'document:shared' })) });
  });

  it('subjects.list returns one page and a next_cursor; subjects.iterate yields every subject across pages', async () => {
    expect(await grantd.subjects.list(query)).toEqual({
      object: 'document:shared',
      relation: 'viewer',
      subjects: readers.slice(0, 2),
      next_cursor: expect.any(String),
    });
    const { client, requests } = counting(tenant.adminKey);
    const seen: string[] = [];
    for await (const subject of client.subjects.iterate(query)) seen.push(subject);
    expect(seen).toEqual(readers);
    expect(requests).toHaveLength(3);
    expect(requests.every((r) => r.startsWith('GET /v1/subjects?object=document%3Ashared&relation=viewer&subject_namespace=user&limit=2'))).toBe(
      true,
    );
  });

  it('subjects.list of an unknown subject namespace throws invalid-request naming it', async () => {
    const error = await problemOf(() => grantd.subjects.list({ ...query, subject_namespace: 'robot' }));
    expect(error).toMatchObject({ type: 'invalid-request', status: 400, errors: [{ path: 'query.subject_namespace', message: expect.any(String) }] });
  });

  it('explain returns the answer and its path, or the reason it is denied', async () => {
    expect(await grantd.explain({ subject: 'user:r3', relation: 'viewer', object: 'document:shared' })).toEqual({
      allowed: true,
      path: [{ subject: 'user:r3', relation: 'viewer', object: 'document:shared', via: 'direct' }],
      reason: null,
    });
    expect(await grantd.explain({ subject: 'user:nobody', relation: 'viewer', object: 'document:shared' })).toEqual({
      allowed: false,
      path: [],
      reason: 'no-path',
    });
    const error = await problemOf(() => grantd.explain({ subject: 'user:r3', relation: 'viewer', object: 'nowhere:x' }));
    expect(error).toMatchObject({ type: 'namespace-not-found', status: 404 });
  });
});

describe('agents', () => {
  it('create, get, list, iterate and delete', async () => {
    const { revision, ...bot } = await grantd.agents.create({
      external_id: 'bot-1',
      display_name: 'Bot',
      owner: 'user:alice',
      scope: ['document:*'],
    });
    expect(revision).toEqual(REVISION);
    expect(bot).toEqual({
      external_id: 'bot-1',
      subject: 'agent:bot-1',
      display_name: 'Bot',
      owner: 'user:alice',
      scope: ['document:*'],
      created_at: TIMESTAMP,
    });
    for (const id of ['bot-2', 'bot-3', 'bot-4']) await grantd.agents.create({ external_id: id, scope: [] });
    expect(await grantd.agents.get('bot-1')).toEqual(bot);

    const page = await grantd.agents.list({ limit: 3 });
    expect(page.agents.map((a) => a.external_id)).toEqual(['bot-1', 'bot-2', 'bot-3']);
    expect(page.next_cursor).toEqual(expect.any(String));
    const all = [];
    for await (const agent of grantd.agents.iterate({ limit: 1 })) all.push(agent.external_id);
    expect(all).toEqual(['bot-1', 'bot-2', 'bot-3', 'bot-4']);

    await grantd.grants.create({ subject: 'agent:bot-1', relation: 'viewer', object: 'document:a1' });
    expect(await grantd.check({ subject: 'agent:bot-1', relation: 'viewer', object: 'document:a1' })).toEqual({ allowed: true });
    expect(await grantd.agents.delete('bot-1')).toEqual({ external_id: 'bot-1', grants_removed: 1, clients_removed: 0, revision: REVISION });
    expect(await grantd.check({ subject: 'agent:bot-1', relation: 'viewer', object: 'document:a1' })).toEqual({ allowed: false });
  });

  it('get and delete of an unknown agent throw agent-not-found 404; create of an existing one agent-exists 409', async () => {
    expect(await problemOf(() => grantd.agents.get('bot-1'))).toMatchObject({ type: 'agent-not-found', status: 404 });
    expect(await problemOf(() => grantd.agents.delete('bot-1'))).toMatchObject({ type: 'agent-not-found', status: 404 });
    expect(await problemOf(() => grantd.agents.create({ external_id: 'bot-2', scope: [] }))).toMatchObject({ type: 'agent-exists', status: 409 });
    expect(await problemOf(() => grantd.grants.create({ subject: 'agent:ghost', relation: 'viewer', object: 'document:a1' }))).toMatchObject({
      type: 'agent-not-found',
      status: 404,
    });
  });

  it('path parameters are encoded', async () => {
    const id = 'svc|east@corp+1=~';
    await grantd.agents.create({ external_id: id, scope: [] });
    expect(await grantd.agents.get(id)).toMatchObject({ external_id: id, subject: `agent:${id}` });
    expect(await grantd.agents.delete(id)).toEqual({ external_id: id, grants_removed: 0, clients_removed: 0, revision: REVISION });
  });
});

describe('keys and scopes', () => {
  it('create returns the secret once; list never shows it; revoke resolves to its revision alone', async () => {
    const key = await grantd.keys.create({ label: 'ci', scopes: ['check:read', 'grant:read'] });
    expect(key).toEqual({
      id: expect.stringMatching(/^key_/),
      prefix: key.secret.slice(0, 17),
      secret: expect.stringMatching(/^svc_live_[A-Za-z0-9]{40,}$/),
      label: 'ci',
      scopes: ['check:read', 'grant:read'],
      created_at: TIMESTAMP,
      revision: REVISION,
    });
    const { keys } = await grantd.keys.list();
    const listed = keys.find((k) => k.id === key.id);
    expect(listed).toEqual({
      id: key.id,
      prefix: key.prefix,
      label: 'ci',
      scopes: ['check:read', 'grant:read'],
      created_at: key.created_at,
      last_used_at: null,
    });
    expect(JSON.stringify(keys)).not.toContain(key.secret);

    const withKey = createClient({ apiKey: key.secret, baseUrl: server.url });
    expect(await withKey.check({ subject: 'user:alice', relation: 'viewer', object: 'document:q3' })).toEqual({ allowed: true });

    await expect(grantd.keys.revoke(key.id)).resolves.toEqual({ revision: REVISION });
    expect((await grantd.keys.list()).keys.map((k) => k.id)).not.toContain(key.id);
    expect(await problemOf(() => grantd.keys.revoke(key.id))).toMatchObject({ type: 'key-not-found', status: 404 });
    expect(await problemOf(() => withKey.check({ subject: 'user:alice', relation: 'viewer', object: 'document:q3' }))).toMatchObject({
      type: 'unauthenticated',
      status: 401,
    });
  });

  it('a key created without input gets ["check:read"]', async () => {
    const key = await grantd.keys.create();
    expect(key).toMatchObject({ label: '', scopes: ['check:read'] });
    await grantd.keys.revoke(key.id);
  });

  it('a key lacking the scope gets insufficient-scope 403, and no retry', async () => {
    const reader = counting(await tenant.keyWith('check:read'));
    expect(await reader.client.check({ subject: 'user:alice', relation: 'viewer', object: 'document:q3' })).toEqual({ allowed: true });
    const denied = [
      () => reader.client.grants.create({ subject: 'user:x', relation: 'viewer', object: 'document:q3' }),
      () => reader.client.grants.list(),
      () => reader.client.namespaces.list(),
      () => reader.client.namespaces.create({ name: 'x' }),
      () => reader.client.agents.create({ external_id: 'x', scope: [] }),
      () => reader.client.keys.list(),
      () => reader.client.keys.create({ scopes: ['admin'] }),
    ];
    reader.requests.length = 0;
    for (const call of denied) {
      const error = await problemOf(call);
      expect(error).toMatchObject({ type: 'insufficient-scope', status: 403, title: 'Insufficient scope', attempts: 1 });
    }
    expect(reader.requests).toHaveLength(denied.length);

    const writer = createClient({ apiKey: await tenant.keyWith('grant:write'), baseUrl: server.url });
    expect(await problemOf(() => writer.keys.revoke('key_whatever'))).toMatchObject({ type: 'insufficient-scope', status: 403 });
    expect(await problemOf(() => writer.check({ subject: 'user:a', relation: 'viewer', object: 'document:q3' }))).toMatchObject({
      type: 'insufficient-scope',
    });
  });

  it('an unknown key gets unauthenticated 401', async () => {
    const stranger = createClient({ apiKey: 'svc_live_0000000000000000000000000000000000000000', baseUrl: server.url });
    expect(await problemOf(() => stranger.namespaces.list())).toMatchObject({ type: 'unauthenticated', status: 401, attempts: 1 });
  });

  it('tenants are isolated', async () => {
    const other = await newTenant(server.services);
    const theirs = createClient({ apiKey: other.adminKey, baseUrl: server.url });
    expect((await theirs.namespaces.list()).namespaces.map((n) => n.name)).toEqual(['agent', 'user']);
    expect(await problemOf(() => theirs.agents.get('bot-2'))).toMatchObject({ type: 'agent-not-found' });
  });
});

describe('client behaviour against the real server', () => {
  it('an unknown route of a wrong base URL is a ProblemError not-found', async () => {
    const wrong = createClient({ apiKey: tenant.adminKey, baseUrl: `${server.url}/api` });
    const error = await problemOf(() => wrong.namespaces.list());
    expect(error).toMatchObject({ type: 'not-found', status: 404 });
    expect(error).not.toBeInstanceOf(UnexpectedResponseError);
  });

  it('a baseUrl with a trailing slash works', async () => {
    const slash = createClient({ apiKey: tenant.adminKey, baseUrl: `${server.url}/` });
    expect((await slash.namespaces.list()).namespaces.length).toBeGreaterThan(2);
  });

  it('per-call timeoutMs is accepted on every kind of method', async () => {
    expect(await grantd.check({ subject: 'user:alice', relation: 'viewer', object: 'document:q3' }, { timeoutMs: 2000 })).toEqual({ allowed: true });
    expect((await grantd.namespaces.list({ timeoutMs: 2000 })).namespaces.length).toBeGreaterThan(0);
    expect((await grantd.keys.list({ timeoutMs: 2000 })).keys.length).toBeGreaterThan(0);
  });

  it('invalid options are programming errors, not ServiceErrors', async () => {
    expect(() => createClient({ apiKey: '' })).toThrow(TypeError);
    expect(() => createClient({ apiKey: 'k', baseUrl: 'not a url' })).toThrow(TypeError);
    expect(() => createClient({ apiKey: 'k', retry: { maxRetries: 4 } })).toThrow(RangeError);
    expect(() => createClient({ apiKey: 'k', timeoutMs: 0 })).toThrow(RangeError);
    await expect(grantd.namespaces.list({ timeoutMs: 0 })).rejects.toThrow(RangeError);
  });

  it('the default base URL is http://localhost:8080', async () => {
    const urls: string[] = [];
    const local = createClient({
      apiKey: 'k',
      fetch: async (input) => {
        urls.push(input);
        return new Response(JSON.stringify({ namespaces: [] }), { headers: { 'content-type': 'application/json' } });
      },
    });
    expect(await local.namespaces.list()).toEqual({ namespaces: [] });
    expect(urls).toEqual(['http://localhost:8080/v1/namespaces']);
  });

  it('error classes are distinct families of ServiceError', () => {
    for (const E of [ProblemError, UnexpectedResponseError, TimeoutError, NetworkError]) expect(E.prototype).toBeInstanceOf(ServiceError);
  });
});

describe('revisions and the changes feed', () => {
  // Another node: the app over services of its own (its own caches), on a socket of its own.
  const otherServices = useServices();

  it('a write names its revision; a read at least that revision sees it at once on another node', async () => {
    const key = (await newTenant(server.services)).adminKey;
    const here = createClient({ apiKey: key, baseUrl: server.url });
    const other = await listen(createApp(otherServices));
    try {
      const there = createClient({ apiKey: key, baseUrl: other.baseUrl });
      await here.namespaces.create({ name: 'doc' });
      const grant = { subject: 'user:a', relation: 'viewer', object: 'doc:1' };
      for (let i = 0; i < 10; i++) {
        expect(await there.check(grant)).toEqual({ allowed: false });
        const { revision } = await here.grants.create(grant);
        expect(await there.check(grant, { consistency: { atLeast: revision! } })).toEqual({ allowed: true });
        const revoked = await here.grants.revoke(grant);
        expect(await there.check(grant, { consistency: { atLeast: revoked.revision! } })).toEqual({ allowed: false });
      }
      expect(await there.namespaces.list({ consistency: 'full' })).toMatchObject({ namespaces: expect.any(Array) });
      const forged = await problemOf(() => there.check(grant, { consistency: { atLeast: 'WyIxIiwiMSJd.forged' } }));
      expect(forged).toMatchObject({ type: 'invalid-revision', status: 400 });
    } finally {
      await other.close();
    }
  });

  it('changes.list reads a page; changes.follow yields every change once, then new ones, until aborted', async () => {
    const own = createClient({ apiKey: (await newTenant(server.services)).adminKey, baseUrl: server.url });
    await own.namespaces.create({ name: 'doc' });
    const first = await own.changes.list({ limit: 1 });
    expect(first.changes).toHaveLength(1);
    expect(first.next_revision).toEqual(expect.any(String));

    const stop = new AbortController();
    const seen: string[] = [];
    const following = (async () => {
      for await (const change of own.changes.follow({ limit: 2, intervalMs: 20, signal: stop.signal })) {
        seen.push(`${change.kind} ${change.op} ${String(change.name ?? change.subject ?? change.label)}`);
        if (seen.length === 6) stop.abort();
      }
    })();
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(4);
    await own.grants.create({ subject: 'user:a', relation: 'viewer', object: 'doc:1' });
    await own.grants.revoke({ subject: 'user:a', relation: 'viewer', object: 'doc:1' });
    await following;
    expect(seen).toEqual([
      'namespace create agent',
      'namespace create user',
      'key create admin',
      'namespace create doc',
      'grant create user:a',
      'grant delete user:a',
    ]);
  });
});
