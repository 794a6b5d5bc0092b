import { describe, expect, it } from 'vitest';
import { CheckTimeShares } from '../../src/engine/check-time.ts';
import { WorkMeter } from '../../src/engine/work-meter.ts';

/** A meter of 2 ms slices on a clock the test moves, its shares (25 %, halving every 500 ms) on the same clock. */
function meterOnClock() {
  const clock = { t: 10_000, now: () => clock.t };
  const shares = new CheckTimeShares(0.25, 500, clock);
  return { clock, shares, meter: new WorkMeter(shares, 2, clock) };
}

/** What the tenant is charged for a run: its wait once it has taken `ms` of a contended second. */
const charged = (shares: CheckTimeShares, tenantId: string) => {
  shares.wait('other'); // another tenant asks, so that the time is contended
  return shares.wait(tenantId);
};

describe('WorkMeter', () => {
  it("charges a run's slices to its tenant, and not the time it spends awaiting outside", async () => {
    const { clock, shares, meter } = meterOnClock();
    await meter.run('a', async (slice) => {
      clock.t += 1; // work
      await slice.outside(Promise.resolve().then(() => (clock.t += 10_000))); // a long read: not the tenant's
      clock.t += 1; // work
    });
    expect(charged(shares, 'a')).toBe(0); // 2 ms of a half-life of 500: well within its share
    await meter.run('b', () => {
      clock.t += 10_000; // ten seconds of work in memory
    });
    expect(charged(shares, 'b')).toBeGreaterThan(0);
  });

  it('gives way at a checkpoint only once the slice is spent', async () => {
    const { clock, meter } = meterOnClock();
    const paused = await meter.run('a', async (slice) => {
      const early = await slice.checkpoint();
      clock.t += 2;
      return [early, slice.due(), await slice.checkpoint(), slice.due()];
    });
    expect(paused).toEqual([false, true, true, false]);
  });

  it('makes a tenant over its share wait its turn before a run and at every pause, while others ask', async () => {
    const { clock, shares, meter } = meterOnClock();
    await meter.run('greedy', () => {
      clock.t += 2_000;
    });
    shares.wait('quiet');
    expect(meter.now('greedy', () => 'ran')).toBeUndefined();
    expect(meter.now('quiet', () => 'ran')).toBe('ran');
    let started = false;
    const run = meter.run('greedy', () => (started = true));
    expect(started).toBe(false); // waits its turn (a timer), not even a synchronous start
    await run;
    expect(started).toBe(true);
  });

  it('shares one slice per turn of the event loop between all runs: a run in a turn whose slice another spent gives way at its first checkpoint', async () => {
    const { clock, meter } = meterOnClock();
    const due = { a: [] as boolean[], b: [] as boolean[] };
    await Promise.all([
      meter.run('a', async (slice) => {
        clock.t += 2; // a unit of a slice's length
        due.a.push(slice.due());
        await slice.pause();
        due.a.push(slice.due());
      }),
      // In the same turn: alone, it would have a slice of its own.
      meter.run('b', async (slice) => {
        due.b.push(slice.due());
        await slice.checkpoint();
        due.b.push(slice.due());
      }),
    ]);
    // Both gave way; in the next turn, a new slice.
    expect(due).toEqual({ a: [true, false], b: [true, false] });
  });
});
