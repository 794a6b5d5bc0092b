import { describe, expect, it } from 'vitest';
import { TenantCache } from '../../src/engine/cache.ts';

describe('TenantCache', () => {
  it('serves entries until they age out', () => {
    const cache = new TenantCache<boolean>(750, 10);
    cache.set('t', 'k', true, cache.generation('t'), 0);
    expect(cache.get('t', 'k', 749)).toBe(true);
    expect(cache.get('t', 'k', 750)).toBeUndefined();
  });

  it('drops a tenant on invalidate, and refuses answers computed before it', () => {
    const cache = new TenantCache<boolean>(1_000, 10);
    const before = cache.generation('t');
    cache.set('t', 'k', true, before, 0);
    cache.set('other', 'k', true, cache.generation('other'), 0);
    cache.invalidate('t');
    expect(cache.get('t', 'k', 1)).toBeUndefined();
    expect(cache.get('other', 'k', 1)).toBe(true);
    cache.set('t', 'k', true, before, 2);
    expect(cache.get('t', 'k', 3)).toBeUndefined();
  });

  it('keeps at most the newest entries of a tenant', () => {
    const cache = new TenantCache<number>(1_000, 2);
    for (const k of ['a', 'b', 'c']) cache.set('t', k, 1, 0, 0);
    expect([cache.get('t', 'a', 1), cache.get('t', 'b', 1), cache.get('t', 'c', 1)]).toEqual([undefined, 1, 1]);
  });
});
