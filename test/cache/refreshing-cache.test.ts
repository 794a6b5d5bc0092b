import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RefreshingCache } from '../../src/cache/refreshing-cache.ts';

/** A loader whose calls the test counts and settles by hand. */
function loader<V>() {
  const calls: { key: string; previous: V | undefined; resolve: (v: V | null) => void; reject: (e: Error) => void }[] = [];
  const load = (key: string, previous: V | undefined) =>
    new Promise<V | null>((resolve, reject) => {
      calls.push({ key, previous, resolve, reject });
    });
  return { calls, load };
}

const settle = () => new Promise((r) => setImmediate(r));

/** A cache (max age 500 ms) whose key 'k' was loaded as 'v1' at the current time. */
async function cacheHoldingV1() {
  const { calls, load } = loader<string>();
  const cache = new RefreshingCache(load, 500);
  const first = cache.get('k');
  calls[0]!.resolve('v1');
  await first;
  return { cache, calls };
}

describe('RefreshingCache', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(0);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('shares one load between concurrent callers', async () => {
    const { calls, load } = loader<string>();
    const cache = new RefreshingCache(load, 500);
    const [a, b] = [cache.get('k'), cache.get('k')];
    expect(calls).toHaveLength(1);
    calls[0]!.resolve('v1');
    expect([await a, await b]).toEqual(['v1', 'v1']);
  });

  it('gives a loaded, fresh value at once (and reloads it past half the age as get does), nothing while loading or past the age', async () => {
    const { calls, load } = loader<string>();
    const cache = new RefreshingCache(load, 500);
    const first = cache.get('k');
    expect(cache.loadedNow('k')).toBeUndefined();
    calls[0]!.resolve('v1');
    await first;
    expect(cache.loadedNow('k')).toBe('v1');
    vi.setSystemTime(250);
    expect(cache.loadedNow('k')).toBe('v1');
    expect(calls).toHaveLength(2);
    vi.setSystemTime(500);
    expect(cache.loadedNow('k')).toBeUndefined();
  });

  it('never serves a value from the instant it says it expires, fresh as its load is: the next caller waits for a load', async () => {
    const { calls, load } = loader<{ until: number }>();
    const cache = new RefreshingCache(load, 500, 10, (value) => value.until);
    const first = cache.get('k');
    calls[0]!.resolve({ until: 100 });
    await first;
    vi.setSystemTime(99);
    expect(cache.has('k')).toBe(true);
    expect(await cache.get('k')).toEqual({ until: 100 });
    expect(calls).toHaveLength(1);
    vi.setSystemTime(100);
    expect(cache.has('k')).toBe(false);
    const again = cache.get('k');
    expect(calls).toHaveLength(2);
    calls[1]!.resolve(null);
    expect(await again).toBeNull();
  });

  it('reloads in the background past half the age, and never serves a value past the age', async () => {
    const { cache, calls } = await cacheHoldingV1();
    vi.setSystemTime(249);
    expect(await cache.get('k')).toBe('v1');
    expect(calls).toHaveLength(1);
    vi.setSystemTime(250);
    expect(await cache.get('k')).toBe('v1'); // served at once while the reload runs
    expect(calls).toHaveLength(2);
    expect(await cache.get('k')).toBe('v1');
    expect(calls).toHaveLength(2); // one reload at a time
    calls[1]!.resolve('v2');
    await settle();
    expect(await cache.get('k')).toBe('v2');
    // The reload began at 250: its value is used until 750, not beyond.
    vi.setSystemTime(750);
    const late = cache.get('k');
    expect(calls).toHaveLength(3);
    calls[2]!.resolve('v3');
    expect(await late).toBe('v3');
  });

  it('waits for a new load when the value is too old, and on demand', async () => {
    const { cache, calls } = await cacheHoldingV1();
    const fresh = cache.get('k', { maxAgeMs: 0 });
    expect(calls).toHaveLength(2);
    calls[1]!.resolve('v2');
    expect(await fresh).toBe('v2');
  });

  it('trusts no value loaded "after" now: once the clock is set back, the next caller waits for a load', async () => {
    vi.setSystemTime(1_000);
    const { cache, calls } = await cacheHoldingV1();
    vi.setSystemTime(0);
    expect(cache.loadedNow('k')).toBeUndefined();
    expect(cache.has('k')).toBe(false);
    const reloaded = cache.get('k', { maxAgeMs: 0 });
    expect(calls).toHaveLength(2);
    calls[1]!.resolve('v2');
    expect(await reloaded).toBe('v2');
    expect(cache.loadedNow('k')).toBe('v2');
  });

  it('forgets a key whose reload finds nothing, and keeps no failed or empty load', async () => {
    const { cache, calls } = await cacheHoldingV1();
    vi.setSystemTime(300);
    await cache.get('k');
    calls[1]!.resolve(null); // revoked meanwhile
    await settle();
    const again = cache.get('k');
    expect(calls).toHaveLength(3);
    calls[2]!.reject(new Error('database down'));
    await expect(again).rejects.toThrow('database down');
    const empty = cache.get('k');
    expect(calls).toHaveLength(4);
    calls[3]!.resolve(null);
    expect(await empty).toBeNull();
    void cache.get('k');
    expect(calls).toHaveLength(5);
  });

  it('keeps serving the value when a background reload fails, until the value is too old', async () => {
    const { cache, calls } = await cacheHoldingV1();
    vi.setSystemTime(300);
    await cache.get('k');
    calls[1]!.reject(new Error('blip'));
    await settle();
    expect(await cache.get('k')).toBe('v1');
    expect(calls).toHaveLength(3); // the failed reload is retried by the next caller
    vi.setSystemTime(500);
    void cache.get('k');
    expect(calls).toHaveLength(4);
  });

  it('drops what a delete or clear forgot, even when a reload was running', async () => {
    const { cache, calls } = await cacheHoldingV1();
    vi.setSystemTime(300);
    await cache.get('k');
    cache.clear();
    calls[1]!.resolve('stale');
    await settle();
    const after = cache.get('k');
    expect(calls).toHaveLength(3);
    calls[2]!.resolve('v2');
    expect(await after).toBe('v2');
  });

  it('gives a load the value it replaces, in the background or past the age', async () => {
    const { cache, calls } = await cacheHoldingV1();
    expect(calls[0]!.previous).toBeUndefined();
    vi.setSystemTime(250);
    void cache.get('k');
    expect(calls[1]!.previous).toBe('v1');
    calls[1]!.resolve('v2');
    await settle();
    vi.setSystemTime(750);
    void cache.get('k');
    expect(calls[2]!.previous).toBe('v2');
  });

  it('holds at most maxEntries keys, forgetting the least recently used', async () => {
    const { calls, load } = loader<string>();
    const cache = new RefreshingCache(load, 500, 2);
    for (const key of ['a', 'b', 'a', 'c']) {
      const value = cache.get(key);
      calls.at(-1)!.resolve(key);
      await value;
    }
    expect(calls.map((c) => c.key)).toEqual(['a', 'b', 'c']); // 'a' the second time came from the cache
    expect([cache.has('a'), cache.has('b'), cache.has('c')]).toEqual([true, false, true]);
    void cache.get('b');
    expect(calls.at(-1)).toMatchObject({ key: 'b', previous: undefined });
  });
});
