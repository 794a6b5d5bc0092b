import { createHash } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { sweepChanges } from '../../src/store/revisions.ts';
import { client, databaseUrl, newTenant, useServices, useTenant } from '../helpers.ts';

/**
 * Revisions and the changes feed (docs/consistency.md#revisions). A second set of services over the
 * same database plays another node: its caches are its own.
 */
const { services, app, tenant, api } = useTenant({ each: true });
const other = createApp(useServices());

interface Change {
  revision: string;
  kind: string;
  op: string;
  actor: Record<string, string> | null;
  [field: string]: unknown;
}
type Api = ReturnType<typeof client>;

/** The revision a write answered with. */
const revisionOf = (res: { headers: Record<string, string | undefined> }): string => {
  const revision = res.headers['grantd-revision'];
  if (revision === undefined) throw new Error('the write answered without Grantd-Revision');
  return revision;
};

/** Every change of the feed after `after`, page by page (limit 2: pages end inside transactions too). */
async function readAll(reader: Api, after?: string): Promise<{ changes: Change[]; next: string }> {
  const changes: Change[] = [];
  let next = after;
  for (;;) {
    const res = await reader.get(`/v1/changes?limit=2${next ? `&after=${encodeURIComponent(next)}` : ''}`).expect(200);
    expect(typeof res.body.next_revision).toBe('string');
    changes.push(...(res.body.changes as Change[]));
    next = res.body.next_revision as string;
    if (res.body.changes.length < 2) return { changes, next };
  }
}

/** The feed once it holds `count` changes: a transaction open anywhere on the database holds the feed back until it ends. */
async function feedOf(reader: Api, count: number, after?: string): Promise<{ changes: Change[]; next: string }> {
  let read = await readAll(reader, after);
  await expect
    .poll(
      async () => {
        read = await readAll(reader, after);
        return read.changes.length;
      },
      { timeout: 10_000, interval: 50 },
    )
    .toBeGreaterThanOrEqual(count);
  return read;
}

const checkAt = (reader: Api, revision: string, object: string) =>
  reader
    .post('/v1/check', { subject: 'user:a', relation: 'viewer', object })
    .set('Grantd-Consistency', `at-least ${revision}`)
    .expect(200)
    .then((res) => res.body.allowed as boolean);

describe('Grantd-Revision', () => {
  it('answers every write, and names a newer state after each later write', async () => {
    const revisions = [
      revisionOf(await api.post('/v1/namespaces', { name: 'doc' }).expect(201)),
      revisionOf(await api.put('/v1/namespaces/doc', {}).expect(200)),
      revisionOf(await api.post('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(201)),
      revisionOf(await api.post('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(200)),
      revisionOf(await api.post('/v1/grants/batch', { writes: [{ subject: 'user:b', relation: 'viewer', object: 'doc:1' }] }).expect(200)),
      revisionOf(await api.delete('/v1/grants?subject=user:b&relation=viewer&object=doc:1').expect(204)),
      revisionOf(await api.delete('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(204)),
      revisionOf(await api.post('/v1/agents', { external_id: 'bot', scope: ['doc:viewer'] }).expect(201)),
      revisionOf(await api.post('/v1/oauth/clients', { name: 'c', type: 'confidential', scopes: ['check:read'] }).expect(201)),
      revisionOf(await api.post('/v1/keys', { label: 'k', scopes: ['check:read'] }).expect(201)),
      revisionOf(await api.delete('/v1/agents/bot').expect(200)),
      revisionOf(await api.delete('/v1/namespaces/doc').expect(204)),
    ];
    expect(new Set(revisions).size).toBe(revisions.length);
    // A failed write names no state.
    const refused = await api.post('/v1/namespaces', { name: 'user' }).expect(409);
    expect(refused.headers['grantd-revision']).toBeUndefined();
    // Reads carry none.
    expect((await api.get('/v1/namespaces').expect(200)).headers['grantd-revision']).toBeUndefined();
  });
});

describe('Grantd-Consistency', () => {
  it('at-least: another node answers from a state including the write, at once, every time', async () => {
    const there = client(other, tenant.adminKey);
    await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
    // The other node holds the tenant (in memory or in its answer cache) before each write.
    for (let i = 0; i < 30; i++) {
      expect(await checkAt(there, (await api.get('/v1/changes?limit=1').expect(200)).body.next_revision, `doc:${i}`)).toBe(false);
      const written = await api.post('/v1/grants', { subject: 'user:a', relation: 'viewer', object: `doc:${i}` }).expect(201);
      expect(await checkAt(there, revisionOf(written), `doc:${i}`)).toBe(true);
      const revoked = await api.delete('/v1/grants', { subject: 'user:a', relation: 'viewer', object: `doc:${i}` }).expect(204);
      expect(await checkAt(there, revisionOf(revoked), `doc:${i}`)).toBe(false);
    }
    // 150 requests, 60 of them catching the other node up: minutes on a machine busy with other work.
  }, 120_000);

  it('at-least covers namespaces, agents and listings on the other node', async () => {
    const there = client(other, tenant.adminKey);
    expect((await there.get('/v1/namespaces/doc')).status).toBe(404);
    const created = revisionOf(await api.post('/v1/namespaces', { name: 'doc', relations: { viewer: {} } }).expect(201));
    await there.get('/v1/namespaces/doc').set('Grantd-Consistency', `at-least ${created}`).expect(200);
    const granted = revisionOf(await api.post('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:x' }).expect(201));
    const listed = await there.get('/v1/objects?namespace=doc&subject=user:a&relation=viewer').set('Grantd-Consistency', `at-least ${granted}`);
    expect(listed.body.objects).toEqual(['x']);
    const changed = revisionOf(await api.put('/v1/namespaces/doc', { relations: { viewer: {}, editor: {} } }).expect(200));
    const check = await there
      .post('/v1/check', { subject: 'user:a', relation: 'editor', object: 'doc:x' })
      .set('Grantd-Consistency', `at-least ${changed}`);
    expect(check.status, JSON.stringify(check.body)).toBe(200);
  });

  it('at-least a revocation: the revoked key is refused on the node that still remembered it', async () => {
    const key = await tenant.keyWith('check:read');
    const there = client(other, key);
    await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
    await there.post('/v1/check', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(200);
    const keyId = (await api.get('/v1/keys').expect(200)).body.keys.find((k: { scopes: string[] }) => k.scopes[0] === 'check:read').id;
    const revoked = revisionOf(await api.delete(`/v1/keys/${keyId}`).expect(204));
    // Without the header, the other node may still honour it for up to 500 ms; with it, never.
    await there
      .post('/v1/check', { subject: 'user:a', relation: 'viewer', object: 'doc:1' })
      .set('Grantd-Consistency', `at-least ${revoked}`)
      .expect(401);
  });

  it('full: answers from the database as it was when the request arrived', async () => {
    const there = client(other, tenant.adminKey);
    await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
    expect((await there.post('/v1/check', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(200)).body.allowed).toBe(false);
    await api.post('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(201);
    const res = await there
      .post('/v1/check', { subject: 'user:a', relation: 'viewer', object: 'doc:1' })
      .set('Grantd-Consistency', 'full')
      .expect(200);
    expect(res.body.allowed).toBe(true);
  });

  it('a revision this server did not issue for the tenant is 400 invalid-revision; a malformed header 400 invalid-request', async () => {
    await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
    const revision = revisionOf(await api.post('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(201));
    // A position written as signed revisions once were, with this revision's bytes as its signature; this one edited.
    const forged = `${Buffer.from(JSON.stringify(['1', '1'])).toString('base64url')}.${revision.slice(0, 22)}`;
    const edited = `${revision.slice(0, 30)}${revision[30] === 'A' ? 'B' : 'A'}${revision.slice(31)}`;
    for (const token of [forged, edited, 'nonsense', `${revision}x`]) {
      const res = await api
        .post('/v1/check', { subject: 'user:a', relation: 'viewer', object: 'doc:1' })
        .set('Grantd-Consistency', `at-least ${token}`);
      expect(res.status).toBe(400);
      // The problem names where the revision came from, as a schema failure's would.
      expect(res.body).toMatchObject({
        type: 'invalid-revision',
        detail: 'header.Grantd-Consistency: the revision was not issued by this server for this tenant',
        errors: [{ path: 'header.Grantd-Consistency', message: 'the revision was not issued by this server for this tenant' }],
      });
      expect((await api.get(`/v1/changes?after=${encodeURIComponent(token)}`)).body).toMatchObject({
        type: 'invalid-revision',
        detail: 'query.after: the revision was not issued by this server for this tenant',
      });
    }
    // Another tenant's revision.
    const b = client(app, (await newTenant(services)).adminKey);
    expect((await b.get('/v1/namespaces').set('Grantd-Consistency', `at-least ${revision}`)).body.type).toBe('invalid-revision');
    expect((await b.get(`/v1/changes?after=${encodeURIComponent(revision)}`)).body.type).toBe('invalid-revision');
    const bad = await api.get('/v1/namespaces').set('Grantd-Consistency', 'latest');
    expect(bad.status).toBe(400);
    expect(bad.body.type).toBe('invalid-request');
  });
});

describe('GET /v1/changes', () => {
  it('every change once, in commit order, with its fields and actor, never a secret', async () => {
    // The tenant's creation: its built-in namespaces and first key, made outside the API.
    const { changes: creation, next: start } = await feedOf(api, 3);
    expect(creation).toMatchObject([
      { kind: 'namespace', op: 'create', name: 'agent', actor: null },
      { kind: 'namespace', op: 'create', name: 'user', actor: null },
      { kind: 'key', op: 'create', label: 'admin', actor: null },
    ]);
    const created = await api.post('/v1/keys', { label: 'writer', scopes: ['grant:write'] }).expect(201);
    const writer = client(app, created.body.secret);
    await writer.post('/v1/namespaces', { name: 'doc' }).expect(201);
    await writer.post('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:1', expires_at: '2999-01-01T00:00:00.000Z' }).expect(201);
    await writer.post('/v1/agents', { external_id: 'bot', display_name: 'Bot', scope: ['doc:viewer'] }).expect(201);
    const oauth = await api.post('/v1/oauth/clients', { name: 'c', type: 'confidential', scopes: ['check:read'], agent: 'bot' }).expect(201);
    await writer.post('/v1/grants/batch', {
      writes: [
        { subject: 'agent:bot', relation: 'viewer', object: 'doc:2' },
        { subject: 'user:b', relation: 'viewer', object: 'agent:bot' },
      ],
    });
    await writer.delete('/v1/agents/bot').expect(200);
    await api.delete(`/v1/keys/${created.body.id}`).expect(204);

    const { changes } = await feedOf(api, 12, start);
    const writerActor = { key_id: created.body.id };
    const adminActor = { key_id: expect.stringMatching(/^key_/) };
    expect(changes.map(({ kind, op }) => `${kind} ${op}`)).toEqual([
      'key create',
      'namespace create',
      'grant create',
      'agent create',
      'oauth_client create',
      'grant create',
      'grant create',
      // The killswitch: the agent's clients, the agent, then each grant naming it.
      'oauth_client delete',
      'agent delete',
      'grant delete',
      'grant delete',
      'key delete',
    ]);
    expect(changes[0]).toMatchObject({ id: created.body.id, label: 'writer', scopes: ['grant:write'], actor: adminActor });
    expect(changes[2]).toMatchObject({
      subject: 'user:a',
      relation: 'viewer',
      object: 'doc:1',
      expires_at: '2999-01-01T00:00:00.000Z',
      not_before: null,
      actor: writerActor,
    });
    expect(changes[3]).toMatchObject({ external_id: 'bot', subject: 'agent:bot', display_name: 'Bot', scope: ['doc:viewer'], actor: writerActor });
    expect(changes[4]).toMatchObject({ client_id: oauth.body.client_id, agent: 'bot', actor: adminActor });
    expect(changes.slice(7).every((c) => c.actor?.key_id === (c.kind === 'key' ? changes[0]!.actor!.key_id : created.body.id))).toBe(true);
    for (const change of changes) expect(Date.parse(change.at as string)).toBeGreaterThan(0);
    const text = JSON.stringify(changes);
    for (const secret of [created.body.secret, oauth.body.client_secret]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(createHash('sha256').update(secret).digest('base64'));
      expect(text).not.toContain(createHash('sha256').update(secret).digest('hex'));
    }
    expect(text).not.toMatch(/secret|hash/);
    // Each change's revision is a position: reading after it gives what follows it, once.
    const { changes: rest } = await readAll(api, changes[5]!.revision);
    expect(rest.map((c) => c.revision)).toEqual(changes.slice(6).map((c) => c.revision));
  });

  it('follows: next_revision is never null, and a follower gets each change once, whatever page it stops at', async () => {
    await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
    let { next } = await feedOf(api, 1);
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      await api.post('/v1/grants', { subject: `user:${i}`, relation: 'viewer', object: 'doc:1' }).expect(201);
      const read = await feedOf(api, 1, next);
      seen.push(...read.changes.map((c) => c.subject as string));
      next = read.next;
    }
    expect(seen).toEqual(['user:0', 'user:1', 'user:2', 'user:3', 'user:4']);
    const idle = await api.get(`/v1/changes?after=${encodeURIComponent(next)}`).expect(200);
    expect(idle.body).toEqual({ changes: [], next_revision: expect.any(String) });
  });

  it('a write revision as `after` gives the changes after that write', async () => {
    await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
    const first = await api.post('/v1/grants', { subject: 'user:1', relation: 'viewer', object: 'doc:1' }).expect(201);
    await api.post('/v1/grants', { subject: 'user:2', relation: 'viewer', object: 'doc:1' }).expect(201);
    const { changes } = await feedOf(api, 1, revisionOf(first));
    expect(changes.map((c) => c.subject)).toEqual(['user:2']);
  });

  it('is not held back by a transaction left open in another database of the same server', async () => {
    const { next: start } = await feedOf(api, 3);
    // `postgres`, which initdb makes on every server (not template1: CREATE DATABASE copies it, and would wait).
    const url = new URL(databaseUrl());
    url.pathname = '/postgres';
    const elsewhere = new pg.Client({ connectionString: url.toString() });
    await elsewhere.connect();
    try {
      await elsewhere.query('BEGIN');
      await elsewhere.query('SELECT pg_current_xact_id()');
      await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
      const { changes } = await feedOf(api, 1, start);
      expect(changes.map((c) => c.name)).toEqual(['doc']);
    } finally {
      await elsewhere.end();
    }
  });

  it("shows no other tenant's changes", async () => {
    await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
    const b = client(app, (await newTenant(services)).adminKey);
    await b.post('/v1/namespaces', { name: 'other' }).expect(201);
    const { changes } = await feedOf(b, 4);
    expect(changes.map((c) => c.name ?? c.label)).toEqual(['agent', 'user', 'admin', 'other']);
  });

  it('answers 410 changes-expired for a position the retention sweep passed, not an empty page', async () => {
    const start = (await api.get('/v1/changes').expect(200)).body.next_revision as string;
    await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
    const { next } = await feedOf(api, 1, start);
    // This tenant's changes made 8 days old: past the default retention, unlike other tests' changes.
    await services.db.$executeRaw`UPDATE changes SET at = at - interval '8 days' WHERE tenant_id = ${tenant.id}::uuid`;
    await sweepChanges(services.db, 7 * 86_400_000, new Date(), 1_000_000);
    const gone = await api.get(`/v1/changes?after=${encodeURIComponent(start)}`);
    expect(gone.status).toBe(410);
    expect(gone.body.type).toBe('changes-expired');
    // From the position the sweep reached on, the feed goes on.
    await api.get(`/v1/changes?after=${encodeURIComponent(next)}`).expect(200);
  });

  it('shows key and OAuth client changes only to a caller allowed to list them, at unchanged positions', async () => {
    const reader = client(app, await tenant.keyWith('grant:read'));
    // The tenant's creation and the reader's key.
    const { next: start } = await feedOf(api, 4);
    await api.post('/v1/namespaces', { name: 'doc' }).expect(201);
    await api.post('/v1/keys', { label: 'hidden-key', scopes: ['check:read'] }).expect(201);
    const redirect = 'https://app.example/hidden-callback';
    await api.post('/v1/oauth/clients', { name: 'c', type: 'public', redirect_uris: [redirect], scopes: ['check:read'] }).expect(201);
    await api.post('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(201);
    // Hidden changes last: the reader's feed must still move past them.
    await api.post('/v1/keys', { label: 'hidden-key-2', scopes: ['check:read'] }).expect(201);
    await api.post('/v1/keys', { label: 'hidden-key-3', scopes: ['check:read'] }).expect(201);

    const { changes: all } = await feedOf(api, 6, start);
    expect(all.map(({ kind, op }) => `${kind} ${op}`)).toEqual([
      'namespace create',
      'key create',
      'oauth_client create',
      'grant create',
      'key create',
      'key create',
    ]);
    // Pages of 2 (readAll), some filled only past hidden changes.
    const { changes: shown, next } = await readAll(reader, start);
    expect(shown.map((c) => c.revision)).toEqual(all.filter((c) => c.kind !== 'key' && c.kind !== 'oauth_client').map((c) => c.revision));
    const text = JSON.stringify((await reader.get(`/v1/changes?after=${encodeURIComponent(start)}`).expect(200)).body);
    expect(text).not.toContain('hidden-key');
    expect(text).not.toContain(redirect);
    // The reader's position is past the trailing hidden changes: the admin finds nothing after it.
    expect((await readAll(api, next)).changes).toEqual([]);
    // A page that only hidden changes follow is empty and still moves on.
    const afterGrant = await reader.get(`/v1/changes?limit=1&after=${encodeURIComponent(shown.at(-1)!.revision)}`).expect(200);
    expect(afterGrant.body.changes).toEqual([]);
    expect((await readAll(api, afterGrant.body.next_revision)).changes).toEqual([]);
  });

  it('needs grant:read', async () => {
    const reader = client(app, await tenant.keyWith('check:read'));
    expect((await reader.get('/v1/changes')).body.type).toBe('insufficient-scope');
  });
});
