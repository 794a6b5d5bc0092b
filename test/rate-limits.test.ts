import { RateLimiterMemory } from 'rate-limiter-flexible';
import { describe, expect, it, vi } from 'vitest';
import { Limit } from '../src/rate-limits.ts';

/** A limit of `points` a minute counted by a limiter of this process (a worker's are its primary's, reached by a message each call). */
function limitOf(points: number) {
  const counters = new RateLimiterMemory({ points, duration: 60 });
  const limit = new Limit(points, 60, counters, (error) => {
    throw error;
  });
  return { limit, consume: vi.spyOn(counters, 'consume'), reward: vi.spyOn(counters, 'reward') };
}

describe('a limit', () => {
  it("counts a turn's takes of a key together, granting them in order as far as the limit goes", async () => {
    const { limit, consume } = limitOf(3);
    const waits = await Promise.all([limit.take('a'), limit.take('a'), limit.take('b'), limit.take('a'), limit.take('a'), limit.take('a')]);
    expect(waits.map((wait) => wait > 0)).toEqual([false, false, false, false, true, true]);
    expect(waits[4]).toBeGreaterThanOrEqual(59);
    expect(consume.mock.calls).toEqual([
      ['a', 5],
      ['b', 1],
    ]);
    // The window's points are spent: a later turn's take waits too.
    expect(await limit.take('a')).toBeGreaterThan(0);
    expect(await limit.take('b')).toBe(0);
  });

  it("gives back a turn's points of a key together, before that turn's takes are counted", async () => {
    const { limit, consume, reward } = limitOf(2);
    expect(await Promise.all([limit.take('a'), limit.take('a')])).toEqual([0, 0]);
    limit.give('a');
    limit.give('a');
    const waits = await Promise.all([limit.take('a'), limit.take('a'), limit.take('a')]);
    expect(waits.slice(0, 2)).toEqual([0, 0]);
    expect(waits[2]).toBeGreaterThan(0);
    expect(reward.mock.calls).toEqual([['a', 2]]);
    expect(consume.mock.calls).toEqual([
      ['a', 2],
      ['a', 3],
    ]);
  });
});
