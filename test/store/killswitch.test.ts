import pg from 'pg';
import { expect, it } from 'vitest';
import { createAgent, deleteAgent } from '../../src/store/agents.ts';
import type { Authority } from '../../src/store/authority.ts';
import { applyBatch, createGrant } from '../../src/store/grants.ts';
import { createKey, createKeyOnAuthority } from '../../src/store/keys.ts';
import { createNamespace } from '../../src/store/namespaces.ts';
import { createOAuthClient } from '../../src/store/oauth-clients.ts';
import { databaseUrl, newTenant, untilBlockedBy, useServices } from '../helpers.ts';

// A connection for each of the nine transactions that wait at once.
const services = useServices({ poolSize: 10 });

/**
 * Runs `body` while another connection holds the agent's row FOR UPDATE, so that the transactions
 * it starts queue behind that lock in the order it starts them; the lock is released by `body`'s COMMIT.
 */
async function holdingAgentRow<T>(tenantId: string, externalId: string, body: (locker: pg.Client) => Promise<T>): Promise<T> {
  const locker = new pg.Client({ connectionString: databaseUrl() });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query(`SELECT 1 FROM agents WHERE tenant_id = $1 AND external_id = $2 FOR UPDATE`, [tenantId, externalId]);
    return await body(locker);
  } finally {
    await locker.end();
  }
}

it('leaves no grant naming a killed agent: writes that locked it first are removed with it, later ones refused', async () => {
  const { db, engine } = services;
  const { id: tenantId } = await newTenant(services);
  await createNamespace(db, tenantId, 'document', null);
  await createAgent(db, tenantId, { externalId: 'bot', displayName: null, owner: null, scope: ['*:*'] });
  const triples = await engine.parseTriples(
    tenantId,
    Array.from({ length: 8 }, (_, i) => ({ subject: 'agent:bot', relation: 'viewer', object: `document:d${i}` })),
    true,
  );
  // Both ways of writing a grant take the agent's lock: one grant, and a batch.
  const write = async (i: number): Promise<'written' | 'refused'> => {
    try {
      if (i % 2 === 0) await applyBatch(db, tenantId, [triples[i]!], []);
      else await createGrant(db, tenantId, triples[i]!);
      return 'written';
    } catch (error) {
      if ((error as { type?: string }).type === 'agent-not-found') return 'refused';
      throw error;
    }
  };

  // The agent's row held: four writes wait for it, then the kill, then four more writes, queued in that order.
  await holdingAgentRow(tenantId, 'bot', async (locker) => {
    const before = [0, 1, 2, 3].map(write);
    await untilBlockedBy(locker, 4);
    const removed = deleteAgent(db, tenantId, 'bot');
    await untilBlockedBy(locker, 5);
    const after = [4, 5, 6, 7].map(write);
    await untilBlockedBy(locker, 9);
    await locker.query('COMMIT');

    expect(await Promise.all(before)).toEqual(['written', 'written', 'written', 'written']);
    expect((await removed)?.grantsRemoved).toBe(4);
    expect(await Promise.all(after)).toEqual(['refused', 'refused', 'refused', 'refused']);
  });
  expect(await db.grant.count({ where: { tenantId, subjectNs: 'agent', subjectId: 'bot' } })).toBe(0);
  expect(await db.agent.count({ where: { tenantId } })).toBe(0);
});

it('revokes the keys and deletes the clients made on the agent’s authority, down a chain, in its one transaction', async () => {
  const { db } = services;
  const { id: tenantId } = await newTenant(services);
  await createAgent(db, tenantId, { externalId: 'bot', displayName: null, owner: null, scope: [] });
  const plain = await createKey(db, tenantId, 'plain', ['admin']);
  const byPlain: Authority = { kind: 'api_key', keyId: plain.id, tenantId };
  const clientOf = (principal: Authority, name: string, agent: string | null = null) =>
    createOAuthClient(db, principal, { name, type: 'confidential', redirectUris: [], scopes: ['admin'], agent }).then(({ row }) => row);

  const own = await clientOf(byPlain, 'own', 'bot');
  expect(own.madeByAgents).toEqual([]);
  const asOwn: Authority = { kind: 'client_credentials', keyId: own.clientId, clientId: own.clientId, tenantId };
  const k1 = await createKeyOnAuthority(db, asOwn, 'k1', ['admin']);
  const c2 = await clientOf({ kind: 'api_key', keyId: k1.id, tenantId }, 'c2');
  const k3 = await createKeyOnAuthority(db, { kind: 'client_credentials', keyId: c2.clientId, clientId: c2.clientId, tenantId }, 'k3', ['admin']);
  // An authorization-code token of a plain client, signed in with K1: what it makes is the agent's too.
  const app = await clientOf(byPlain, 'app');
  const k4 = await createKeyOnAuthority(
    db,
    { kind: 'authorization_code', keyId: app.clientId, clientId: app.clientId, tenantId, signingKeyId: k1.id },
    'k4',
    ['admin'],
  );
  await db.oAuthRecord.create({ data: { kind: 'Grant', id: 'signed-in-by-k1', payload: {}, clientId: app.clientId, accountId: k1.id } });
  await createKeyOnAuthority(db, byPlain, 'bystander', ['admin']);
  expect((await db.apiKey.findMany({ where: { tenantId }, orderBy: { label: 'asc' } })).map((k) => [k.label, k.madeByAgents])).toEqual([
    ['admin', []],
    ['bystander', []],
    ['k1', ['bot']],
    ['k3', ['bot']],
    ['k4', ['bot']],
    ['plain', []],
  ]);

  expect(await deleteAgent(db, tenantId, 'bot')).toEqual({ grantsRemoved: 0, clientsRemoved: 2, keysRevoked: 3 });
  const live = await db.apiKey.findMany({ where: { tenantId, revokedAt: null }, select: { label: true } });
  expect(live.map((k) => k.label).sort()).toEqual(['admin', 'bystander', 'plain']);
  expect((await db.oAuthClient.findMany({ where: { tenantId } })).map((c) => c.clientId)).toEqual([app.clientId]);
  expect(await db.oAuthRecord.count({ where: { accountId: k1.id } })).toBe(0);
  // One transaction: the feed records every change of the kill under one transaction id.
  const kill = await db.change.findMany({ where: { tenantId, op: 'delete' } });
  expect(kill.map((c) => c.kind).sort()).toEqual(['agent', 'key', 'key', 'key', 'oauth_client', 'oauth_client']);
  expect(new Set(kill.map((c) => c.xid)).size).toBe(1);
  expect(
    kill
      .filter((c) => c.kind === 'key')
      .map((c) => (c.data as { id: string }).id)
      .sort(),
  ).toEqual([k1.id, k3.id, k4.id].sort());

  // Nothing more is made on the ended authority; an agent registered again under the name inherits nothing.
  await expect(createKeyOnAuthority(db, { kind: 'api_key', keyId: k1.id, tenantId }, 'late', ['admin'])).rejects.toMatchObject({
    type: 'unauthenticated',
  });
  await expect(createKeyOnAuthority(db, asOwn, 'late', ['admin'])).rejects.toMatchObject({ type: 'unauthenticated' });
  await createAgent(db, tenantId, { externalId: 'bot', displayName: null, owner: null, scope: [] });
  await expect(createKeyOnAuthority(db, { kind: 'api_key', keyId: k3.id, tenantId }, 'late', ['admin'])).rejects.toMatchObject({
    type: 'unauthenticated',
  });
  expect(await deleteAgent(db, tenantId, 'bot')).toEqual({ grantsRemoved: 0, clientsRemoved: 0, keysRevoked: 0 });
  expect(await db.apiKey.count({ where: { tenantId, revokedAt: null } })).toBe(3);
});

it('ends a key made while it waited, and refuses one made after it: creations lock the agent as grant writes do', async () => {
  const { db } = services;
  const { id: tenantId } = await newTenant(services);
  await createAgent(db, tenantId, { externalId: 'bot', displayName: null, owner: null, scope: [] });
  const { row: own } = await createOAuthClient(
    db,
    { kind: 'api_key', keyId: (await createKey(db, tenantId, 'plain', ['admin'])).id, tenantId },
    { name: 'own', type: 'confidential', redirectUris: [], scopes: ['admin'], agent: 'bot' },
  );
  const asOwn: Authority = { kind: 'client_credentials', keyId: own.clientId, clientId: own.clientId, tenantId };
  const make = async (label: string): Promise<string> => {
    try {
      return (await createKeyOnAuthority(db, asOwn, label, ['admin'])).id;
    } catch (error) {
      if ((error as { type?: string }).type === 'unauthenticated') return 'refused';
      throw error;
    }
  };

  await holdingAgentRow(tenantId, 'bot', async (locker) => {
    const before = make('before');
    await untilBlockedBy(locker, 1);
    const removed = deleteAgent(db, tenantId, 'bot');
    await untilBlockedBy(locker, 2);
    const after = make('after');
    await untilBlockedBy(locker, 3);
    await locker.query('COMMIT');

    const made = await before;
    expect(made).toMatch(/^key_/);
    expect(await removed).toEqual({ grantsRemoved: 0, clientsRemoved: 1, keysRevoked: 1 });
    expect(await after).toBe('refused');
    expect((await db.apiKey.findUnique({ where: { id: made } }))?.revokedAt).not.toBeNull();
  });
  expect(await db.apiKey.count({ where: { tenantId, label: 'after' } })).toBe(0);
});
