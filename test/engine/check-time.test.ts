import { describe, expect, it } from 'vitest';
import { CheckTimeShares } from '../../src/engine/check-time.ts';

/** Shares of 25 %, sums halving every 500 ms, on a clock the test moves. */
function sharesOnClock() {
  const clock = { t: 10_000, now: () => clock.t };
  return { clock, shares: new CheckTimeShares(0.25, 500, clock) };
}

describe('CheckTimeShares', () => {
  it('never makes a tenant alone wait, however much time its checks take', () => {
    const { clock, shares } = sharesOnClock();
    const a = shares.of('a');
    for (let i = 0; i < 100; i++) {
      expect(a.wait()).toBe(0);
      a.spent(10);
      clock.t += 10;
    }
  });

  it("makes a tenant over its share wait while another tenant's checks are asked for, until it is back to its share", () => {
    const { clock, shares } = sharesOnClock();
    const [a, b] = [shares.of('a'), shares.of('b')];
    expect(b.wait()).toBe(0); // b asks
    for (let i = 0; i < 50; i++) {
      a.spent(10); // a takes all the time for half a second
      clock.t += 10;
    }
    const wait = a.wait();
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(100);
    expect(b.wait()).toBe(0); // b, under its share, never waits
    clock.t += 2_000; // a's time decays, and b has not asked for a while
    expect(a.wait()).toBe(0);
  });

  it('lets a tenant at its share go on', () => {
    const { clock, shares } = sharesOnClock();
    const [a, b] = [shares.of('a'), shares.of('b')];
    for (let i = 0; i < 200; i++) {
      b.wait();
      expect(a.wait()).toBe(0);
      a.spent(2); // 2 ms of every 10: 20 %, under 25 %
      clock.t += 10;
    }
  });

  it('makes a tenant over its share wait just as long as its time takes to decay back to its share', () => {
    const { clock, shares } = sharesOnClock();
    const [a, b] = [shares.of('a'), shares.of('b')];
    b.wait();
    a.spent(200); // a little over a quarter of the time, summed over a half-life of 500 ms
    const wait = a.wait();
    expect(wait).toBeGreaterThan(10);
    expect(wait).toBeLessThan(100); // under the longest wait: the time to decay is what it gave
    clock.t += wait - 5;
    expect(a.wait()).toBeCloseTo(5, 6);
    clock.t += 5.001;
    expect(a.wait()).toBe(0);
  });

  it('counts another tenant as asking for a second after it last asked, not from then on', () => {
    const { clock, shares } = sharesOnClock();
    const [a, b] = [shares.of('a'), shares.of('b')];
    b.wait();
    clock.t += 999;
    a.spent(1_000);
    expect(a.wait()).toBeGreaterThan(0);
    clock.t += 1;
    expect(a.wait()).toBe(0);
  });
});
