import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { databaseLookups, KeyVerifier } from '../../src/auth/verifier.ts';
import { FRESHNESS_MS } from '../../src/config.ts';
import { ChangeWatch } from '../../src/store/change-watch.ts';
import { connect } from '../../src/store/db.ts';
import { createNamespace } from '../../src/store/namespaces.ts';
import { findKey, revokeKey } from '../../src/store/keys.ts';
import { SchemaCache } from '../../src/store/schema-cache.ts';
import { HeldTenants } from '../../src/store/held-tenants.ts';
import pino from 'pino';
import { DOCUMENT_RELATIONS } from '../engine/fixtures.ts';
import { tenantGraph } from '../engine/tenant-graph.ts';
import { hashSecret, secretPrefix } from '../../src/auth/secrets.ts';
import { databaseUrl, newTenant, useServices, type TestTenant } from '../helpers.ts';

// docs/decisions.md#a-change-watch-keeps-unchanged-tenants-cached: what a tenant's last lookup found
// is used past FRESHNESS_MS while the watch, polled within it, saw nothing of the tenant change.
const services = useServices();
/** A watch and caches of their own over a pool of their own: the services' caches are another node here. */
const own = connect(databaseUrl(), 3);
afterAll(() => own.close());

/** This node: a watch polled by hand, and the verifier and schema cache that ask it, with the statements they send counted. */
function node() {
  const watch = new ChangeWatch(own.pool, { maxAgeMs: FRESHNESS_MS, intervalMs: 200 });
  const lookups = databaseLookups(own.db, own.pool);
  const findKeys = vi.spyOn(lookups, 'findKey');
  const keys = new KeyVerifier(lookups, { watch });
  const schemas = new SchemaCache(own.pool, { watch });
  const schemaLoads = vi.spyOn(schemas as unknown as { load: (tenantId: string) => Promise<unknown> }, 'load');
  const verify = async (secret: string) => (await keys.verify(keys.credentialOf(secret)!))?.tenantId ?? null;
  return { watch, keys, schemas, verify, findKeys, schemaLoads };
}

const keyIdOf = async (tenant: TestTenant) => (await findKey(own.pool, secretPrefix(tenant.adminKey), hashSecret(tenant.adminKey))).principal!.keyId;

/** Moves Date's clock (alone: the pools' timers keep real time). */
const later = (ms: number) => vi.advanceTimersByTime(ms);

describe('the change watch', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it("keeps an unchanged tenant's key and schema with no statement of their own, and sees a revocation at its next poll", async () => {
    const [a, b] = await Promise.all([newTenant(services), newTenant(services)]);
    const here = node();
    await here.watch.poll();
    later(1);
    expect(await here.verify(a.adminKey)).toBe(a.id);
    expect(await here.verify(b.adminKey)).toBe(b.id);
    await here.schemas.get(a.id);
    expect(here.findKeys).toHaveBeenCalledTimes(2);
    expect(here.schemaLoads).toHaveBeenCalledTimes(1);

    // Long past FRESHNESS_MS, the watch polled meanwhile: no lookup, no reload, not even ahead.
    for (let i = 0; i < 5; i++) {
      later(FRESHNESS_MS);
      await here.watch.poll();
      expect(await here.verify(a.adminKey)).toBe(a.id);
      expect(await here.verify(b.adminKey)).toBe(b.id);
      await here.schemas.get(a.id);
    }
    expect(here.findKeys).toHaveBeenCalledTimes(2);
    expect(here.schemaLoads).toHaveBeenCalledTimes(1);

    // Revoked on another node: refused from the next poll on, while b's key is still not looked up.
    expect(await revokeKey(services.db, a.id, await keyIdOf(a))).toBe(true);
    later(1);
    await here.watch.poll();
    expect(await here.verify(a.adminKey)).toBeNull();
    expect(await here.verify(b.adminKey)).toBe(b.id);
    expect(here.findKeys).toHaveBeenCalledTimes(3);

    // A namespace created on another node: the schema is loaded again, b's is not asked for.
    await createNamespace(services.db, a.id, 'document', { viewer: {} });
    later(1);
    await here.watch.poll();
    expect((await here.schemas.get(a.id)).namespace('document')).toBeDefined();
    expect(here.schemaLoads).toHaveBeenCalledTimes(2);
  });

  it("keeps a held tenant's grants answering with no catch-up while unchanged, and catches up once written elsewhere", async () => {
    const g = await tenantGraph(services);
    await g.namespace('document', DOCUMENT_RELATIONS);
    await g.grant(['user:ann', 'owner', 'document:d0']);
    const here = node();
    const held = new HeldTenants(own.pool, { maxGrants: 1_000, maxAgeMs: FRESHNESS_MS, watch: here.watch }, pino({ level: 'silent' }));
    const catchUps = vi.spyOn((held as unknown as { replayer: { catchUp: () => Promise<boolean> } }).replayer, 'catchUp');
    try {
      await here.watch.poll();
      later(1);
      expect(await held.load(g.tenantId)).toBe(true);
      for (let i = 0; i < 5; i++) {
        later(FRESHNESS_MS);
        await here.watch.poll();
        expect(held.currentNow(g.tenantId)?.index.size).toBe(1);
      }
      expect(catchUps).not.toHaveBeenCalled();

      await g.grant(['user:ann', 'owner', 'document:d1']); // another node's write
      later(1);
      await here.watch.poll();
      expect(held.currentNow(g.tenantId)).toBeUndefined(); // long past the age rule, and changed
      expect((await held.current(g.tenantId))?.index.size).toBe(2);
      expect(catchUps).toHaveBeenCalledTimes(1);
    } finally {
      await held.close();
    }
  });

  it('falls back to the age rule when its polls fail: a revocation is then seen within FRESHNESS_MS', async () => {
    const a = await newTenant(services);
    const here = node();
    await here.watch.poll();
    later(1);
    expect(await here.verify(a.adminKey)).toBe(a.id);

    const failing = vi.spyOn(own.pool, 'query').mockRejectedValue(new Error('connection lost'));
    await expect(here.watch.poll()).rejects.toThrow('connection lost');
    failing.mockRestore();
    expect(await revokeKey(services.db, a.id, await keyIdOf(a))).toBe(true);
    later(FRESHNESS_MS);
    expect(await here.verify(a.adminKey)).toBeNull();
    expect(here.findKeys).toHaveBeenCalledTimes(2);
  });

  it('does not miss a change committed after a poll by a transaction older than one it already read', async () => {
    const [a, b] = await Promise.all([newTenant(services), newTenant(services)]);
    const here = node();
    await here.watch.poll();
    later(1);
    const loadedAt = Date.now();
    later(1);
    const older = new pg.Client({ connectionString: databaseUrl() });
    await older.connect();
    try {
      await older.query('BEGIN');
      await older.query('SELECT pg_current_xact_id()'); // its id, below the revocation's that commits first
      expect(await revokeKey(services.db, b.id, await keyIdOf(b))).toBe(true);
      await here.watch.poll();
      expect(here.watch.covers(b.id, loadedAt)).toBe(false);
      expect(here.watch.covers(a.id, loadedAt)).toBe(true);

      await older.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [await keyIdOf(a)]);
      await older.query('COMMIT');
      await here.watch.poll();
      expect(here.watch.covers(a.id, loadedAt)).toBe(false);
    } finally {
      await older.end();
    }
  });

  it('sees a tenant deleted, whose feed goes with it', async () => {
    const a = await newTenant(services);
    const here = node();
    await here.watch.poll();
    later(1);
    expect(await here.verify(a.adminKey)).toBe(a.id);
    await services.db.tenant.delete({ where: { id: a.id } });
    later(FRESHNESS_MS);
    await here.watch.poll();
    expect(await here.verify(a.adminKey)).toBeNull();
  });

  it('vouches for nothing loaded before the clock was set back, whose instants no longer order loads and changes', async () => {
    const a = await newTenant(services);
    const here = node();
    await here.watch.poll();
    const loadedAt = Date.now();
    vi.setSystemTime(loadedAt - 900);
    await here.watch.poll();
    expect(here.watch.covers(a.id, loadedAt)).toBe(false);
    expect(here.watch.covers(a.id, Date.now())).toBe(false);
    vi.setSystemTime(loadedAt + 1000);
    await here.watch.poll();
    later(1);
    expect(here.watch.covers(a.id, Date.now())).toBe(true);
  });

  it('vouches for nothing loaded before its first poll, nor once its last poll is FRESHNESS_MS old', async () => {
    const a = await newTenant(services);
    const here = node();
    const before = Date.now();
    later(1);
    await here.watch.poll();
    later(1);
    expect(here.watch.covers(a.id, before)).toBe(false);
    const after = Date.now();
    later(1);
    expect(here.watch.covers(a.id, after)).toBe(true);
    later(FRESHNESS_MS);
    expect(here.watch.covers(a.id, after)).toBe(false);
  });
});
