import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseRef } from '../../src/engine/refs.ts';
import { sweepExpiredGrants } from '../../src/store/expired-grants.ts';
import { applyBatch, createGrant } from '../../src/store/grants.ts';
import { useServices } from '../helpers.ts';
import { tenantGraph } from '../engine/tenant-graph.ts';

/**
 * Windows in the database: what the grant log carries to nodes holding a tenant in memory (a
 * replaced window included), and the sweep of expired grants. The server's clock is Date's, set here.
 */
const services = useServices();
const databaseOnly = useServices({ graphMemory: 0 });

afterEach(() => {
  vi.useRealTimers();
});

const ref = (value: string) => parseRef(value, 'subject');
const triple = (subject: string, relation: string, object: string) => ({ subject: ref(subject), relation, object: ref(object) });

describe('windows in the database', () => {
  it('reach a tenant held in memory through the grant log, a replaced window too, and agree with the database', async () => {
    const T = Math.ceil(Date.now() / 1000) * 1000 + 5_000;
    vi.useFakeTimers({ toFake: ['Date'], now: T });
    const g = await tenantGraph(services);
    await g.namespace('document');
    expect(await services.heldTenants.load(g.tenantId)).toBe(true);
    const ann = triple('user:ann', 'viewer', 'document:d1');
    await createGrant(services.db, g.tenantId, { ...ann, window: { notBefore: T + 1000, expiresAt: T + 2000 } });
    services.engine.invalidate(g.tenantId);
    const answers = async (ms: number) => {
      vi.setSystemTime(T + ms);
      const query = { subject: 'user:ann', relation: 'viewer', object: 'document:d1' };
      return [await services.engine.check(g.tenantId, query), await databaseOnly.engine.check(g.tenantId, query)];
    };
    expect(await answers(999)).toEqual([false, false]);
    expect(await answers(1000)).toEqual([true, true]);
    expect(services.heldTenants.holds(g.tenantId)).toBe(true);
    // Replaced: in force from T + 3000 on, with no end.
    const replaced = await createGrant(services.db, g.tenantId, { ...ann, window: { notBefore: T + 3000, expiresAt: null } });
    expect(replaced.outcome).toBe('replaced');
    services.engine.invalidate(g.tenantId);
    databaseOnly.engine.invalidate(g.tenantId); // as a node that made the write would
    expect(await answers(1500)).toEqual([false, false]);
    expect(await answers(3000)).toEqual([true, true]);
    expect(await answers(100_000)).toEqual([true, true]);
    // Replaced by a batch: without a window at all.
    expect(await applyBatch(services.db, g.tenantId, [{ ...ann, window: null }], [])).toEqual({ written: 1, deleted: 0 });
    services.engine.invalidate(g.tenantId);
    databaseOnly.engine.invalidate(g.tenantId);
    expect(await answers(0)).toEqual([true, true]);
  });

  it('sweeps grants expired for the retention, and nothing sooner', async () => {
    const g = await tenantGraph(services);
    await g.namespace('document');
    // Long expired (the store takes that; the API would not), so that the sweeps here, which span
    // tenants, reach no other test's grants.
    const expiresAt = Date.UTC(2000, 0, 1);
    await applyBatch(
      services.db,
      g.tenantId,
      [
        { ...triple('user:ann', 'viewer', 'document:d1'), window: { notBefore: null, expiresAt } },
        { ...triple('user:bob', 'viewer', 'document:d1'), window: { notBefore: null, expiresAt: expiresAt + 1 } },
        triple('user:cat', 'viewer', 'document:d1'),
      ],
      [],
    );
    const left = async () =>
      (await services.db.grant.findMany({ where: { tenantId: g.tenantId }, orderBy: { subjectId: 'asc' } })).map((r) => r.subjectId);
    const retention = 3_600_000;
    await sweepExpiredGrants(services.db, retention, new Date(expiresAt + retention - 1));
    expect(await left()).toEqual(['ann', 'bob', 'cat']);
    await sweepExpiredGrants(services.db, retention, new Date(expiresAt + retention));
    expect(await left()).toEqual(['bob', 'cat']);
    await sweepExpiredGrants(services.db, 0, new Date(expiresAt + 1));
    expect(await left()).toEqual(['cat']);
  });

  it('explain the same from memory as from the database while a window opens and closes', async () => {
    const T = Math.ceil(Date.now() / 1000) * 1000 + 5_000;
    vi.useFakeTimers({ toFake: ['Date'], now: T });
    const g = await tenantGraph(services);
    await g.namespace('document');
    await g.namespace('group');
    expect(await services.heldTenants.load(g.tenantId)).toBe(true);
    // ann reaches d1 through a group whose membership is in force from T + 1000 to T + 2000.
    await createGrant(services.db, g.tenantId, {
      ...triple('user:ann', 'member', 'group:eng'),
      window: { notBefore: T + 1000, expiresAt: T + 2000 },
    });
    await g.grant(['group:eng', 'viewer', 'document:d1']);
    const reasons = async (ms: number) => {
      vi.setSystemTime(T + ms);
      const query = { subject: 'user:ann', relation: 'viewer', object: 'document:d1' };
      const [memory, database] = [await services.engine.explain(g.tenantId, query), await databaseOnly.engine.explain(g.tenantId, query)];
      expect(services.heldTenants.holds(g.tenantId)).toBe(true);
      expect(memory).toEqual(database);
      return memory.reason;
    };
    expect(await reasons(999)).toBe('not-yet-valid');
    expect(await reasons(1000)).toBeNull();
    expect(await reasons(2000)).toBe('expired');
  });
});
