import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { SchemaCache } from '../../src/store/schema-cache.ts';
import { createNamespace } from '../../src/store/namespaces.ts';
import { connect } from '../../src/store/db.ts';
import { databaseUrl, newTenant, useServices } from '../helpers.ts';

const services = useServices();
/** A cache of its own over a connection of its own (the services' pool is not theirs to hand out). */
const own = connect(databaseUrl(), 2);
afterAll(() => own.close());

/** Counts the loads of the services' schema cache from now on. */
const countLoads = () => vi.spyOn(services.schemas as unknown as { load: (tenantId: string) => Promise<unknown> }, 'load');

describe("a tenant's compiled schema", () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('is compiled once per version of its definitions, however often it is reloaded', async () => {
    const { id } = await newTenant(services);
    const first = await services.schemas.get(id);
    const reloaded = await services.schemas.get(id, { maxAgeMs: 0 });
    expect(reloaded).toBe(first);

    // Created elsewhere (another node): the next reload reads the new version and compiles it.
    await createNamespace(services.db, id, 'document', { viewer: {} });
    const after = await services.schemas.get(id, { maxAgeMs: 0 });
    expect(after).not.toBe(first);
    expect(after.namespace('document')).toEqual({ name: 'document', relations: { viewer: {} } });
    expect(await services.schemas.get(id, { maxAgeMs: 0 })).toBe(after);
  });

  it("is read in one statement the first time (a tenant's first check waits for it), and its version alone on a reload", async () => {
    const schemas = new SchemaCache(own.pool);
    const { id } = await newTenant(services);
    await createNamespace(services.db, id, 'document', { viewer: {} });
    const statements = vi.spyOn(own.pool, 'query');
    const first = await schemas.get(id);
    expect(first.namespace('document')).toEqual({ name: 'document', relations: { viewer: {} } });
    const named = () => statements.mock.calls.map(([query]) => (query as unknown as { name: string }).name);
    expect(named()).toEqual(['grantd_namespaces']);
    expect(await schemas.get(id, { maxAgeMs: 0 })).toBe(first);
    expect(named()).toEqual(['grantd_namespaces', 'grantd_namespaces_version']);
    // Changed: the version read, then the version with the definitions.
    await createNamespace(services.db, id, 'folder', null);
    expect((await schemas.get(id, { maxAgeMs: 0 })).namespace('folder')).toEqual({ name: 'folder', relations: null });
    expect(named().slice(2)).toEqual(['grantd_namespaces_version', 'grantd_namespaces']);
  });

  it('is held for the most recently used tenants only, up to maxTenants: one evicted is compiled again', async () => {
    const schemas = new SchemaCache(own.pool, { maxTenants: 2 });
    const [a, b, c] = await Promise.all([newTenant(services), newTenant(services), newTenant(services)]);
    const first = await schemas.get(a.id);
    const bFirst = await schemas.get(b.id);
    expect(await schemas.get(a.id, { maxAgeMs: 0 })).toBe(first); // reloaded, not compiled again
    await schemas.get(c.id); // b, the least recently used, goes
    expect(await schemas.get(b.id, { maxAgeMs: 0 })).not.toBe(bFirst); // and a goes
    const aAgain = await schemas.get(a.id, { maxAgeMs: 0 });
    expect(aAgain).not.toBe(first);
    expect(aAgain.namespaces).toEqual(first.namespaces);
  });

  it('is reloaded at most once in 100 ms for checks naming a namespace that does not exist', async () => {
    const { id } = await newTenant(services);
    await services.schemas.get(id);
    vi.useFakeTimers({ toFake: ['Date'] });
    const loads = countLoads();
    const checkUnknown = () => services.engine.check(id, { subject: 'user:ann', relation: 'viewer', object: 'nothing:x' });
    for (let i = 0; i < 20; i++) await expect(checkUnknown()).rejects.toMatchObject({ type: 'namespace-not-found' });
    expect(loads.mock.calls.length).toBeLessThanOrEqual(1);
    vi.advanceTimersByTime(150);
    await expect(checkUnknown()).rejects.toMatchObject({ type: 'namespace-not-found' });
    expect(loads.mock.calls.length).toBeLessThanOrEqual(2);
    expect(loads.mock.calls.length).toBeGreaterThanOrEqual(1);
  });

  it('is reloaded at once when a check names a namespace created elsewhere since its last load', async () => {
    const { id } = await newTenant(services);
    await services.schemas.get(id);
    await createNamespace(services.db, id, 'folder', null);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.advanceTimersByTime(150);
    expect(await services.engine.check(id, { subject: 'user:ann', relation: 'viewer', object: 'folder:f1' })).toBe(false);
  });
});
