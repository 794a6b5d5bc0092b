import pg from 'pg';
import { expect, it } from 'vitest';
import { createAgent, deleteAgent } from '../../src/store/agents.ts';
import { applyBatch, createGrant } from '../../src/store/grants.ts';
import { createNamespace } from '../../src/store/namespaces.ts';
import { databaseUrl, newTenant, untilBlockedBy, useServices } from '../helpers.ts';

// A connection for each of the nine transactions that wait at once.
const services = useServices({ poolSize: 10 });

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
  const locker = new pg.Client({ connectionString: databaseUrl() });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query(`SELECT 1 FROM agents WHERE tenant_id = $1 AND external_id = 'bot' FOR UPDATE`, [tenantId]);
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
  } finally {
    await locker.end();
  }
  expect(await db.grant.count({ where: { tenantId, subjectNs: 'agent', subjectId: 'bot' } })).toBe(0);
  expect(await db.agent.count({ where: { tenantId } })).toBe(0);
});
