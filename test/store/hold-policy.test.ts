import { describe, expect, it } from 'vitest';
import { decayedUses, displaced, EVICTION_ADVANTAGE, MIN_USES_TO_HOLD, USES_HALF_LIFE_MS } from '../../src/store/hold-policy.ts';

/** Which tenants a node holds when they do not all fit (src/store/hold-policy.ts): pure decisions, no clock read. */
const tenant = (tenantId: string, weight: number, uses: number) => ({ tenantId, weight, uses });

describe('uses of a tenant', () => {
  it('halve every half-life, and never grow by waiting', () => {
    expect(decayedUses(8, 1_000, 1_000)).toBe(8);
    expect(decayedUses(8, 1_000, 1_000 + USES_HALF_LIFE_MS)).toBe(4);
    expect(decayedUses(8, 1_000, 1_000 + 3 * USES_HALF_LIFE_MS)).toBe(1);
    expect(decayedUses(8, 1_000, 1_000 + 10, 10)).toBe(4);
    expect(decayedUses(8, 1_000, 500)).toBe(8); // a clock that stepped back
  });
});

describe('the tenants a candidate displaces', () => {
  it('are none while it fits in the room left, however little it is used', () => {
    expect(displaced(tenant('new', 40, 0), [tenant('a', 50, 100)], 100)).toEqual([]);
    expect(displaced(tenant('new', 50, 1), [tenant('a', 50, 100)], 100)).toEqual([]);
  });

  it('is nobody when it weighs more than the node holds at all', () => {
    expect(displaced(tenant('huge', 101, 1_000_000), [], 100)).toBeNull();
  });

  it('are the held tenants used least for what they weigh, only as many as make room', () => {
    const held = [tenant('dense', 10, 50), tenant('sparse', 30, 1), tenant('idle', 20, 0), tenant('middling', 30, 6)];
    // uses / weight: idle 0, sparse 0.03, middling 0.2, dense 5; 10 left free.
    expect(displaced(tenant('new', 25, 10), held, 100)).toEqual(['idle']);
    expect(displaced(tenant('new', 55, 10), held, 100)).toEqual(['idle', 'sparse']);
    expect(displaced(tenant('new', 80, 30), held, 100)).toEqual(['idle', 'sparse', 'middling']);
  });

  it(`need a candidate used ${MIN_USES_TO_HOLD} times at least: one check says little of a tenant`, () => {
    const held = [tenant('idle', 100, 0)];
    expect(displaced(tenant('new', 10, MIN_USES_TO_HOLD - 0.01), held, 100)).toBeNull();
    expect(displaced(tenant('new', 10, MIN_USES_TO_HOLD), held, 100)).toEqual(['idle']);
  });

  it(`need a candidate used ${EVICTION_ADVANTAGE} times more than all they are together, so that two alike do not take turns`, () => {
    const held = [tenant('a', 50, 3), tenant('b', 50, 3)];
    expect(displaced(tenant('new', 50, 3 * EVICTION_ADVANTAGE + 0.01), held, 100)).toEqual(['a']);
    expect(displaced(tenant('new', 50, 3 * EVICTION_ADVANTAGE), held, 100)).toBeNull();
    // Taking a's place, the candidate would not be displaced back by a, used as before.
    expect(displaced(tenant('a', 50, 3), [tenant('new', 50, 6.01), tenant('b', 50, 3)], 100)).toBeNull();
  });

  it('never make a big tenant seldom checked displace many small ones checked often', () => {
    const smalls = Array.from({ length: 100 }, (_, i) => tenant(`small${i}`, 300, 20));
    // 200,000 grants checked 500 times: more than any one small tenant, less than the smalls together.
    expect(displaced(tenant('big', 20_000, 500), smalls, 30_000)).toBeNull();
    // Checked more than twice all those it would displace (67 smalls, 1,340 uses), it is held.
    expect(displaced(tenant('big', 20_000, 2_700), smalls, 30_000)).toHaveLength(67);
  });

  it('never make a small tenant displace a big one checked more than it', () => {
    expect(displaced(tenant('small', 300, 50), [tenant('big', 100_000, 60)], 100_000)).toBeNull();
    expect(displaced(tenant('small', 300, 121), [tenant('big', 100_000, 60)], 100_000)).toEqual(['big']);
  });
});
