import pino from 'pino';
import type pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { AuthorizationEngine } from '../../src/engine/engine.ts';
import { createAgent, deleteAgent } from '../../src/store/agents.ts';
import { connect } from '../../src/store/db.ts';
import { createGrant } from '../../src/store/grants.ts';
import { CheckRouter } from '../../src/store/check-router.ts';
import { SchemaCache } from '../../src/store/schema-cache.ts';
import { HeldTenants } from '../../src/store/held-tenants.ts';
import { createNamespace } from '../../src/store/namespaces.ts';
import { databaseUrl, newTenant, useServices } from '../helpers.ts';

/** The node that writes. */
const writer = useServices();
/** A second node answering from PostgreSQL (nothing held in memory), its caches on a clock the test moves. */
const second = connect(databaseUrl(), 2);
afterAll(() => second.close());
// Not 0: lru-cache takes an entry stored at time 0 for one without a start, which never expires.
const T = 10_000;
let now = T;
const clock = { now: () => now };
const secondEngine = new AuthorizationEngine(new CheckRouter(second.pool, new SchemaCache(second.pool), null, { clock }));

it('never allows a check that no state of the database allowed, across a kill and a re-registration elsewhere', async () => {
  const { id: tenantId } = await newTenant(writer);
  await createNamespace(writer.db, tenantId, 'document', null);
  // State 1: the agent holds editor on d1, but its scope covers only viewer: not allowed.
  await createAgent(writer.db, tenantId, { externalId: 'bot', displayName: null, owner: null, scope: ['document:viewer'] });
  const grant = { subject: { ns: 'agent', id: 'bot' }, relation: 'editor', object: { ns: 'document', id: 'd1' } };
  await createGrant(writer.db, tenantId, grant);
  const check = (object: string) => secondEngine.check(tenantId, { subject: 'agent:bot', relation: 'editor', object });

  now = T;
  expect(await check('document:d2')).toBe(false); // the second node reads the agent at T
  now = T + 300;
  expect(await check('document:d1')).toBe(false); // and the graph answer for d1 at T + 300

  // State 2, on the writing node: the agent is killed (its grant goes) and registered again with editor in scope.
  await deleteAgent(writer.db, tenantId, 'bot');
  await createAgent(writer.db, tenantId, { externalId: 'bot', displayName: null, owner: null, scope: ['document:editor'] });

  // Whatever the second node still remembers and whatever it reads again, no answer joins the old
  // grant to the new scope: neither state allowed it.
  for (now = T + 300; now <= T + 1_200; now += 50) expect(await check('document:d1')).toBe(false);
});

it('holds no agent beside grants of another state of the database, however a kill and a re-registration fall between reads', async () => {
  const { id: tenantId } = await newTenant(writer);
  await createNamespace(writer.db, tenantId, 'document', null);
  await createAgent(writer.db, tenantId, { externalId: 'bot', displayName: null, owner: null, scope: ['document:viewer'] });
  await createGrant(writer.db, tenantId, { subject: { ns: 'agent', id: 'bot' }, relation: 'editor', object: { ns: 'document', id: 'd1' } });

  // A node holding the tenant in memory, whose pool runs `afterLogRead` once right after it reads the grant log.
  let afterLogRead: (() => Promise<void>) | null = null;
  const pool = new Proxy(second.pool, {
    get(target, property, receiver) {
      if (property !== 'query') return Reflect.get(target, property, receiver) as unknown;
      return async (config: pg.QueryConfig) => {
        const result: unknown = await target.query(config);
        const hook = afterLogRead;
        if (config.name === 'grantd_grant_log' && hook) {
          afterLogRead = null;
          await hook();
        }
        return result;
      };
    },
  });
  const heldTenants = new HeldTenants(pool, { maxGrants: 1_000, maxAgeMs: 500 }, pino({ level: 'silent' }));
  afterAll(() => heldTenants.close());
  const engine = new AuthorizationEngine(new CheckRouter(second.pool, new SchemaCache(second.pool), heldTenants));
  expect(await heldTenants.load(tenantId)).toBe(true);
  const check = () => engine.check(tenantId, { subject: 'agent:bot', relation: 'editor', object: 'document:d1' });
  expect(await check()).toBe(false);

  // A logged change of the agent, so that the next catch-up reads the agent again; and, right after
  // that catch-up has read the log, the agent is killed and registered again with editor in scope.
  await writer.db.agent.update({ where: { tenantId_externalId: { tenantId, externalId: 'bot' } }, data: { displayName: 'Bot' } });
  afterLogRead = async () => {
    await deleteAgent(writer.db, tenantId, 'bot');
    await createAgent(writer.db, tenantId, { externalId: 'bot', displayName: null, owner: null, scope: ['document:editor'] });
  };
  engine.invalidate(tenantId); // the next check waits for a catch-up
  expect(await check()).toBe(false);
  expect(afterLogRead).toBeNull();
  engine.invalidate(tenantId);
  expect(await check()).toBe(false); // the kill's state: no grant
});
