import { afterEach, describe, expect, it, vi } from 'vitest';
import { createNamespace } from '../../src/store/namespaces.ts';
import { newTenant, useServices } from '../helpers.ts';

const services = useServices();

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
