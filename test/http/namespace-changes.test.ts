import pg from 'pg';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { client, databaseUrl, DOCUMENT_NAMESPACE, newTenant, untilBlockedBy, useTenant } from '../helpers.ts';

/** GET, PUT and DELETE /v1/namespaces/{name} (docs/model.md#changing-the-model). */
// Connections enough for a request held behind a lock while others queue behind it.
const { services, app, tenant, api } = useTenant({ poolSize: 8, each: true });

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const grant = (subject: string, relation: string, object: string) => ({ subject, relation, object });
const check = async (subject: string, relation: string, object: string) => {
  const res = await api.post('/v1/check', { subject, relation, object });
  expect(res.status).toBe(200);
  return res.body.allowed as boolean;
};

beforeEach(async () => {
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
});

describe('GET /v1/namespaces/{name}', () => {
  it('answers the namespace, updated_at equal to created_at while it never changed', async () => {
    const res = await api.get('/v1/namespaces/document');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...DOCUMENT_NAMESPACE, created_at: expect.stringMatching(TIMESTAMP), updated_at: res.body.created_at });
    expect((await api.get('/v1/namespaces/user')).body).toMatchObject({ name: 'user', relations: null });
  });

  it('answers 404 namespace-not-found for an unknown one, and for another tenant', async () => {
    const other = client(app, (await newTenant(services)).adminKey);
    for (const res of [await api.get('/v1/namespaces/invoice'), await other.get('/v1/namespaces/document')]) {
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ type: 'namespace-not-found', detail: expect.stringMatching(/^namespace (invoice|document) does not exist$/) });
    }
  });

  it('answers 400 invalid-request for a malformed name', async () => {
    const res = await api.get('/v1/namespaces/Document');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'invalid-request', errors: [{ path: 'path.name', message: expect.any(String) }] });
  });

  it('needs grant:read', async () => {
    const reader = client(app, await tenant.keyWith('grant:read'));
    const checker = client(app, await tenant.keyWith('check:read'));
    expect((await reader.get('/v1/namespaces/document')).status).toBe(200);
    expect((await checker.get('/v1/namespaces/document')).body.type).toBe('insufficient-scope');
  });
});

describe('PUT /v1/namespaces/{name}: allowed changes', () => {
  it('adds a relation and an include, answers 200 with the new body, and checks answer by it at once', async () => {
    await api.post('/v1/grants', grant('user:alice', 'owner', 'document:q3')).expect(201);
    expect((await api.post('/v1/check', grant('user:alice', 'approver', 'document:q3'))).body.type).toBe('unknown-relation');
    const relations = { ...DOCUMENT_NAMESPACE.relations, approver: { includes: ['owner'] } };
    const res = await api.put('/v1/namespaces/document', { relations });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      name: 'document',
      relations,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(res.body.created_at));
    expect(await check('user:alice', 'approver', 'document:q3')).toBe(true);
    await api.post('/v1/grants', grant('user:bob', 'approver', 'document:q3')).expect(201);
    expect((await api.get('/v1/namespaces/document')).body).toEqual(res.body);
  });

  it('drops an include: what it conferred is no longer held', async () => {
    await api.post('/v1/grants', grant('user:alice', 'owner', 'document:q3')).expect(201);
    expect(await check('user:alice', 'viewer', 'document:q3')).toBe(true);
    const relations = { ...DOCUMENT_NAMESPACE.relations, editor: {} };
    await api.put('/v1/namespaces/document', { relations }).expect(200);
    expect(await check('user:alice', 'editor', 'document:q3')).toBe(false);
    expect(await check('user:alice', 'viewer', 'document:q3')).toBe(false);
    expect(await check('user:alice', 'owner', 'document:q3')).toBe(true);
  });

  it('removes a relation no grant uses', async () => {
    const { parent: _parent, ...rest } = DOCUMENT_NAMESPACE.relations;
    const relations = { ...rest, viewer: { includes: ['editor'] } };
    await api.put('/v1/namespaces/document', { relations }).expect(200);
    expect((await api.post('/v1/grants', grant('folder:f1', 'parent', 'document:q3'))).body.type).toBe('unknown-relation');
  });

  it('opens a declared namespace, and declares an open one whose grants use only declared relations', async () => {
    await api.post('/v1/grants', grant('user:alice', 'owner', 'document:q3')).expect(201);
    const opened = await api.put('/v1/namespaces/document', {});
    expect(opened.status).toBe(200);
    expect(opened.body.relations).toBeNull();
    // Open: any relation, nothing inherited.
    await api.post('/v1/grants', grant('user:carol', 'reader', 'document:q3')).expect(201);
    expect(await check('user:alice', 'viewer', 'document:q3')).toBe(false);
    const declared = await api.put('/v1/namespaces/document', { relations: { owner: {}, reader: {}, viewer: { includes: ['owner', 'reader'] } } });
    expect(declared.status).toBe(200);
    expect(await check('user:alice', 'viewer', 'document:q3')).toBe(true);
    expect(await check('user:carol', 'viewer', 'document:q3')).toBe(true);
  });

  it('leaves updated_at as it was when the definition is the same', async () => {
    const first = await api.put('/v1/namespaces/document', { relations: { ...DOCUMENT_NAMESPACE.relations, extra: {} } });
    const again = await api.put('/v1/namespaces/document', { relations: { extra: {}, ...DOCUMENT_NAMESPACE.relations } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it('is seen by checks answered from the in-memory index of a held tenant', async () => {
    await api.post('/v1/grants', grant('user:alice', 'owner', 'document:q3')).expect(201);
    // A tenant's second check starts its load (docs/consistency.md#grants-held-in-memory).
    for (let i = 0; i < 2; i++) expect(await check('user:alice', 'viewer', 'document:q3')).toBe(true);
    await expect.poll(() => services.heldTenants.holds(tenant.id)).toBe(true);
    await api.put('/v1/namespaces/document', { relations: { ...DOCUMENT_NAMESPACE.relations, editor: {} } }).expect(200);
    expect(await check('user:alice', 'viewer', 'document:q3')).toBe(false);
    await api.put('/v1/namespaces/document', { relations: { ...DOCUMENT_NAMESPACE.relations, approver: { includes: ['owner'] } } }).expect(200);
    expect(await check('user:alice', 'viewer', 'document:q3')).toBe(true);
    expect(await check('user:alice', 'approver', 'document:q3')).toBe(true);
    const listed = await api.get('/v1/objects?namespace=document&subject=user:alice&relation=approver');
    expect(listed.body.objects).toEqual(['q3']);
  });
});

describe('PUT /v1/namespaces/{name}: refusals', () => {
  it('answers 409 namespace-in-use naming each removed relation and how many grants use it, and changes nothing', async () => {
    await api.post('/v1/grants/batch', {
      writes: [grant('user:a', 'owner', 'document:1'), grant('user:b', 'owner', 'document:2'), grant('user:c', 'editor', 'document:1')],
    });
    const res = await api.put('/v1/namespaces/document', { relations: { parent: {}, viewer: { includes: ['parent->viewer'] } } });
    expect(res.status).toBe(409);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toEqual({
      type: 'namespace-in-use',
      title: 'Namespace in use',
      status: 409,
      detail:
        'namespace document would no longer declare relations that grants use: editor (1 grant), owner (2 grants); declare them, or revoke those grants first',
    });
    expect((await api.get('/v1/namespaces/document')).body.relations).toEqual(DOCUMENT_NAMESPACE.relations);
  });

  it('answers 409 when an open namespace would be declared without relations its grants use', async () => {
    await api.post('/v1/namespaces', { name: 'repo' }).expect(201);
    await api.post('/v1/grants', grant('user:a', 'maintainer', 'repo:r1')).expect(201);
    await api.post('/v1/grants', grant('user:a', 'reader', 'repo:r1')).expect(201);
    const res = await api.put('/v1/namespaces/repo', { relations: { reader: {} } });
    expect(res.status).toBe(409);
    expect(res.body.detail).toContain('maintainer (1 grant)');
    expect(res.body.detail).not.toContain('reader (');
    const empty = await api.put('/v1/namespaces/repo', { relations: {} });
    expect(empty.body.detail).toContain('maintainer (1 grant), reader (1 grant)');
  });

  it.each([
    ['an include of an undeclared relation', { a: { includes: ['b'] } }],
    ['an arrow through an undeclared relation', { viewer: { includes: ['parent->viewer'] } }],
    ['a cycle', { a: { includes: ['b'] }, b: { includes: ['a'] } }],
  ])('answers 400 invalid-namespace for %s', async (_, relations) => {
    const res = await api.put('/v1/namespaces/document', { relations });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('invalid-namespace');
  });

  it.each([
    ['an unknown field', { relations: {}, name: 'document' }],
    ['a malformed include', { relations: { a: { includes: ['->b'] } } }],
    ['more than 64 relations', { relations: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`r${i}`, {}])) }],
  ])('answers 400 invalid-request for %s', async (_, body) => {
    const res = await api.put('/v1/namespaces/document', body);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('invalid-request');
  });

  it('answers 400 invalid-request when the model would compile past its limit, naming the rows', async () => {
    const chain = Object.fromEntries(
      Array.from({ length: 64 }, (_, i) => [
        `c${i}`,
        { includes: [...(i > 0 ? [`c${i - 1}`] : []), ...Array.from({ length: 15 }, (_, j) => `c${j}->t`)] },
      ]),
    );
    for (const name of ['big0', 'big1', 'big2']) await api.post('/v1/namespaces', { name, relations: chain }).expect(201);
    const res = await api.put('/v1/namespaces/document', { relations: chain });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/and with this definition this one's would compile to 12160$/);
  });

  it('answers 400 invalid-namespace for user and agent', async () => {
    for (const name of ['user', 'agent']) {
      const res = await api.put(`/v1/namespaces/${name}`, { relations: {} });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ type: 'invalid-namespace', detail: `namespace ${name} is built in and cannot be changed or deleted` });
    }
  });

  it('answers 404 namespace-not-found for an unknown namespace, and another tenant cannot change this one', async () => {
    expect((await api.put('/v1/namespaces/invoice', {})).body.type).toBe('namespace-not-found');
    const other = client(app, (await newTenant(services)).adminKey);
    expect((await other.put('/v1/namespaces/document', {})).status).toBe(404);
    expect((await api.get('/v1/namespaces/document')).body.relations).toEqual(DOCUMENT_NAMESPACE.relations);
  });

  it('needs grant:write', async () => {
    const reader = client(app, await tenant.keyWith('grant:read'));
    expect((await reader.put('/v1/namespaces/document', {})).body.type).toBe('insufficient-scope');
  });
});

describe('DELETE /v1/namespaces/{name}', () => {
  it('deletes an unused namespace: 204, then 404 for it, and it can be created again', async () => {
    await api.post('/v1/namespaces', { name: 'repo' }).expect(201);
    const res = await api.delete('/v1/namespaces/repo');
    expect(res.status).toBe(204);
    expect((await api.get('/v1/namespaces/repo')).status).toBe(404);
    expect((await api.post('/v1/check', grant('user:a', 'reader', 'repo:r1'))).body.type).toBe('namespace-not-found');
    expect((await api.delete('/v1/namespaces/repo')).body.type).toBe('namespace-not-found');
    await api.post('/v1/namespaces', { name: 'repo' }).expect(201);
  });

  it('answers 409 namespace-in-use while a grant names an object or a subject in it, and deletes it once they are gone', async () => {
    await api.post('/v1/namespaces', { name: 'team', relations: { member: {} } }).expect(201);
    await api.post('/v1/grants', grant('user:a', 'member', 'team:eng')).expect(201);
    await api.post('/v1/grants', grant('team:eng', 'viewer', 'document:q3')).expect(201);
    await api.post('/v1/grants', grant('team:eng', 'editor', 'document:q3')).expect(201);
    const both = await api.delete('/v1/namespaces/team');
    expect(both.status).toBe(409);
    expect(both.body).toMatchObject({
      type: 'namespace-in-use',
      detail: 'namespace team is in use: 1 grant names an object in it and 2 grants name a subject in it; revoke them before deleting it',
    });
    await api.delete('/v1/grants', grant('user:a', 'member', 'team:eng')).expect(204);
    expect((await api.delete('/v1/namespaces/team')).body.detail).toBe(
      'namespace team is in use: 2 grants name a subject in it; revoke them before deleting it',
    );
    await api.post('/v1/grants/batch', { deletes: [grant('team:eng', 'viewer', 'document:q3'), grant('team:eng', 'editor', 'document:q3')] });
    await api.delete('/v1/namespaces/team').expect(204);
  });

  it('is not held back by arrows of other namespaces naming its relations', async () => {
    await api.post('/v1/namespaces', { name: 'folder', relations: { viewer: {} } }).expect(201);
    await api.delete('/v1/namespaces/folder').expect(204);
  });

  it('answers 400 invalid-namespace for user and agent, 404 for another tenant, and needs grant:write', async () => {
    expect((await api.delete('/v1/namespaces/user')).body.type).toBe('invalid-namespace');
    expect((await api.delete('/v1/namespaces/agent')).body.type).toBe('invalid-namespace');
    const other = client(app, (await newTenant(services)).adminKey);
    expect((await other.delete('/v1/namespaces/document')).status).toBe(404);
    const reader = client(app, await tenant.keyWith('grant:read'));
    expect((await reader.delete('/v1/namespaces/document')).body.type).toBe('insufficient-scope');
    await api.get('/v1/namespaces/document').expect(200);
  });
});

describe('a change racing grant writes', () => {
  let locker: pg.Client;
  beforeEach(async () => {
    locker = new pg.Client({ connectionString: databaseUrl() });
    await locker.connect();
    await locker.query('BEGIN');
  });
  afterAll(async () => {
    await locker?.end().catch(() => undefined);
  });
  const release = async () => {
    await locker.query('ROLLBACK');
    await locker.end();
  };
  /** Starts a supertest request now (it is lazy), resolving to its response. */
  const start = <T>(request: PromiseLike<T>): Promise<T> => Promise.resolve(request);
  const withoutApprover = { relations: DOCUMENT_NAMESPACE.relations };
  const withApprover = { relations: { ...DOCUMENT_NAMESPACE.relations, approver: {} } };

  it('a grant that locked the namespace first is counted: the change that removes its relation is refused', async () => {
    await api.put('/v1/namespaces/document', withApprover).expect(200);
    await api.post('/v1/agents', { external_id: 'bot', scope: ['*:*'] }).expect(201);
    // The grant write takes the namespace's share lock, then waits for the agent's row.
    await locker.query(`SELECT 1 FROM agents WHERE tenant_id = $1 AND external_id = 'bot' FOR UPDATE`, [tenant.id]);
    const write = start(api.post('/v1/grants', grant('agent:bot', 'approver', 'document:q3')));
    await untilBlockedBy(locker, 1);
    const change = start(api.put('/v1/namespaces/document', withoutApprover));
    await untilBlockedBy(locker, 2);
    await release();
    expect((await write).status).toBe(201);
    const refused = await change;
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toContain('approver (1 grant)');
  });

  it('a grant that comes after the change took the lock is checked against the new definition', async () => {
    await api.put('/v1/namespaces/document', withApprover).expect(200);
    // The change locks the namespace's row, then waits for the tenant's.
    await locker.query('SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE', [tenant.id]);
    const change = start(api.put('/v1/namespaces/document', withoutApprover));
    await untilBlockedBy(locker, 1);
    const write = start(api.post('/v1/grants', grant('user:a', 'approver', 'document:q3')));
    const batch = start(
      api.post('/v1/grants/batch', { writes: [grant('user:b', 'owner', 'document:q3'), grant('user:b', 'approver', 'document:q3')] }),
    );
    await untilBlockedBy(locker, 3);
    await release();
    expect((await change).status).toBe(200);
    for (const res of [await write, await batch]) {
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        type: 'unknown-relation',
        detail: 'namespace document declares no relation approver; it declares editor, owner, parent, viewer',
      });
    }
    expect((await api.get('/v1/grants?object=document:q3')).body.grants).toEqual([]);
  });

  it('a grant naming a subject in a namespace being deleted holds the delete back', async () => {
    await api.post('/v1/namespaces', { name: 'team' }).expect(201);
    await api.post('/v1/agents', { external_id: 'bot', scope: ['*:*'] }).expect(201);
    await locker.query(`SELECT 1 FROM agents WHERE tenant_id = $1 AND external_id = 'bot' FOR UPDATE`, [tenant.id]);
    const write = start(api.post('/v1/grants', grant('team:eng', 'member', 'agent:bot')));
    await untilBlockedBy(locker, 1);
    const remove = start(api.delete('/v1/namespaces/team'));
    await untilBlockedBy(locker, 2);
    await release();
    expect((await write).status).toBe(201);
    expect((await remove).body).toMatchObject({ type: 'namespace-in-use', detail: expect.stringContaining('1 grant names a subject in it') });
  });

  it('unforced: of grant writes racing a change that removes their relation, none survives a change that succeeded', async () => {
    await locker.query('ROLLBACK');
    for (let round = 0; round < 5; round++) {
      await api.put('/v1/namespaces/document', withApprover).expect(200);
      const writes = Array.from({ length: 6 }, (_, i) =>
        start(api.post('/v1/grants', grant(`user:r${round}u${i}`, 'approver', `document:r${round}`))),
      );
      const change = await api.put('/v1/namespaces/document', withoutApprover);
      const statuses = (await Promise.all(writes)).map((res) => res.status);
      const survivors = (await api.get(`/v1/grants?object=document:r${round}`)).body.grants.length;
      expect(statuses.every((s) => s === 201 || s === 400)).toBe(true);
      expect(survivors).toBe(statuses.filter((s) => s === 201).length);
      // The change succeeded and no grant survived, or it was refused (409) naming the grants written
      // before the refusal; writes after it may add more, all deleted then for the next round.
      const consistent = change.status === 200 ? survivors === 0 : change.status === 409 && /approver \(\d+ grants?\)/.test(change.body.detail);
      expect(consistent, JSON.stringify({ change: change.status, detail: change.body?.detail, survivors })).toBe(true);
      if (change.status !== 200) {
        await api.post('/v1/grants/batch', {
          deletes: Array.from({ length: 6 }, (_, i) => grant(`user:r${round}u${i}`, 'approver', `document:r${round}`)),
        });
      }
    }
  });
});
