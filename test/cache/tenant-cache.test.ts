import { describe, expect, it } from 'vitest';
import { TenantCache } from '../../src/cache/tenant-cache.ts';

/** A clock the test moves; lru-cache treats a start time of 0 as "no TTL", so it starts later. */
const clockAt = (start = 1_000) => {
  const clock = { t: start, now: () => clock.t };
  return clock;
};

describe('TenantCache', () => {
  it('serves entries until they age out', () => {
    const clock = clockAt();
    const cache = new TenantCache<boolean>({ maxAgeMs: 500, maxEntries: 10, clock });
    cache.set('t', 'k', true, cache.generation('t'));
    clock.t += 499;
    expect(cache.get('t', 'k')).toBe(true);
    clock.t += 2;
    expect(cache.get('t', 'k')).toBeUndefined();
  });

  it('drops a tenant on invalidate, and refuses answers computed before it', () => {
    const cache = new TenantCache<boolean>({ maxAgeMs: 1_000, maxEntries: 10, clock: clockAt() });
    const before = cache.generation('t');
    cache.set('t', 'k', true, before);
    cache.set('other', 'k', true, cache.generation('other'));
    cache.invalidate('t');
    expect(cache.get('t', 'k')).toBeUndefined();
    expect(cache.get('other', 'k')).toBe(true);
    cache.set('t', 'k', true, before);
    expect(cache.get('t', 'k')).toBeUndefined();
    cache.set('t', 'k', false, cache.generation('t'));
    expect(cache.get('t', 'k')).toBe(false);
  });

  it('keeps tenants apart under the same key', () => {
    const cache = new TenantCache<number>({ maxAgeMs: 1_000, maxEntries: 10, clock: clockAt() });
    cache.set('a', 'k', 1, 0);
    cache.set('b', 'k', 2, 0);
    expect([cache.get('a', 'k'), cache.get('b', 'k'), cache.get('c', 'k')]).toEqual([1, 2, undefined]);
  });

  it('keeps at most maxEntries, dropping the least recently used', () => {
    const cache = new TenantCache<number>({ maxAgeMs: 1_000, maxEntries: 2, clock: clockAt() });
    cache.set('t', 'a', 1, 0);
    cache.set('t', 'b', 1, 0);
    cache.get('t', 'a');
    cache.set('t', 'c', 1, 0);
    expect([cache.get('t', 'a'), cache.get('t', 'b'), cache.get('t', 'c')]).toEqual([1, undefined, 1]);
  });
});
