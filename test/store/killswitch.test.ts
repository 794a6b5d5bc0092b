import pino from 'pino';
import { afterAll, expect, it } from 'vitest';
import { createServices } from '../../src/runtime.ts';
import { createAgent, deleteAgent } from '../../src/store/agents.ts';
import { applyBatch, createGrant } from '../../src/store/grants.ts';
import { createNamespace } from '../../src/store/namespaces.ts';
import { databaseUrl, newTenant } from '../helpers.ts';

// A pool as large as a busy node's, so that writes really run concurrently with the delete.
const services = createServices(databaseUrl(), { poolSize: 20 }, pino({ level: 'silent' }));
afterAll(() => services.close());

it('leaves no grant naming a killed agent, however writes race the delete', async () => {
  const { db, engine } = services;
  const { id: tenantId } = await newTenant(services);
  await createNamespace(db, tenantId, 'document', null);
  await createAgent(db, tenantId, { externalId: 'bot', displayName: null, owner: null, scope: ['*:*'] });

  // Writers keep granting to the agent until it is gone; the kill lands while many writes are in flight.
  let next = 0;
  const write = async (): Promise<'written' | 'refused' | 'not written'> => {
    const i = next++;
    const [triple] = await engine.parseTriples(tenantId, [{ subject: 'agent:bot', relation: 'viewer', object: `document:d${i}` }], true);
    try {
      if (i % 3 === 0) await applyBatch(db, tenantId, [triple!], []);
      else await createGrant(db, tenantId, triple!);
      return 'written';
    } catch (error) {
      if ((error as { type?: string }).type === 'agent-not-found') return 'refused';
      // Under a loaded machine a transaction may not get a connection in time (P2028): not written.
      if ((error as { code?: string }).code === 'P2028') return 'not written';
      throw error;
    }
  };
  const outcomes: Array<'written' | 'refused' | 'not written'> = [];
  const writer = async () => {
    for (let refused = 0; refused < 3; ) {
      const outcome = await write();
      outcomes.push(outcome);
      if (outcome === 'refused') refused++;
    }
  };
  const writers = Array.from({ length: 8 }, writer);
  while (outcomes.length < 150) await new Promise((resolve) => setTimeout(resolve, 5));
  const removed = await deleteAgent(db, tenantId, 'bot');
  await Promise.all(writers);

  const survivors = await db.grant.count({ where: { tenantId, subjectNs: 'agent', subjectId: 'bot' } });
  expect(survivors).toBe(0);
  expect(removed?.grantsRemoved).toBe(outcomes.filter((o) => o === 'written').length);
  expect(outcomes.filter((o) => o === 'refused').length).toBeGreaterThan(0);
  expect(await db.agent.count({ where: { tenantId } })).toBe(0);
}, 60_000);
