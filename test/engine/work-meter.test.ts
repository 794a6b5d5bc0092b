import { describe, expect, it } from 'vitest';
import { CheckTimeShares } from '../../src/engine/check-time.ts';
import { WorkMeter, type Slice } from '../../src/engine/work-meter.ts';

/** A meter of 2 ms slices on a clock the test moves, its shares (25 %, halving every 500 ms) on the same clock. */
function meterOnClock() {
  const clock = { t: 10_000, now: () => clock.t };
  const shares = new CheckTimeShares(0.25, 500, clock);
  return { clock, shares, meter: new WorkMeter(shares, 2, clock) };
}

/** Resolves once the event loop has reached its check phase: a new turn. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

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
    await nextTurn(); // that run spent its turn's slice
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

  it('runs a unit at once only in a turn whose slice is not spent: then a check waits for a later turn', async () => {
    const { clock, meter } = meterOnClock();
    expect(meter.now('a', () => (clock.t += 2))).toBe(10_002); // a unit as long as the slice: it runs, and spends the turn
    expect(meter.now('b', () => 'ran')).toBeUndefined();
    await nextTurn();
    expect(meter.now('b', () => 'ran')).toBe('ran');
  });

  it("spends the turn's slice on work in memory only: the requests' own work between units (reading, parsing, answering) does not", async () => {
    const { clock, meter } = meterOnClock();
    expect(meter.now('a', () => (clock.t += 1))).toBe(10_001);
    clock.t += 5; // other requests read and answered in the same turn
    expect(meter.now('b', () => (clock.t += 1))).toBe(10_007); // the turn holds 1 ms of work in memory: it runs
    expect(meter.now('c', () => 'ran')).toBeUndefined(); // 2 ms of it: spent
    await nextTurn();
    expect(meter.now('c', () => 'ran')).toBe('ran');
  });

  it('counts a run that awaits across turns without giving way from the turn it is in, not from when it began', async () => {
    const { clock, meter } = meterOnClock();
    let release = (): void => undefined;
    let worked = (): void => undefined;
    const working = new Promise<void>((resolve) => (worked = resolve));
    const run = meter.run('a', async () => {
      clock.t += 5; // works past the slice, then awaits something of its own (not `outside`)
      worked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await working; // still this turn
    expect(meter.now('b', () => 'ran')).toBeUndefined(); // its slice is spent
    await nextTurn();
    // Still open, but none of its time is this turn's.
    expect(meter.now('b', () => 'ran')).toBe('ran');
    release();
    await run;
  });

  it('runs one unit per turn once the slice is spent, however many runs wait: each resumed run finding the turn spent waits again', async () => {
    const { clock, meter } = meterOnClock();
    let turn = 0;
    const countTurns = () => void setImmediate(() => ((turn += 1), turn < 20 && countTurns()));
    countTurns();
    const secondUnitTurns: number[] = [];
    const twoUnits = async (slice: Slice) => {
      clock.t += 2; // each unit spends a whole slice
      await slice.checkpoint();
      clock.t += 2;
      secondUnitTurns.push(turn);
    };
    await Promise.all([1, 2, 3, 4].map(() => meter.run('a', twoUnits)));
    // The four second units each in a turn of its own: not all four in the turn after the first units.
    expect(new Set(secondUnitTurns).size).toBe(4);
  });

  it('resumes first the run of the waiting tenant that took the least time lately, not the runs in the order they paused', async () => {
    const { clock, meter } = meterOnClock();
    const order: string[] = [];
    const unit = (name: string) => async (slice: Slice) => {
      clock.t += 2; // spends the turn's slice: every run after it gives way
      await slice.checkpoint();
      order.push(name);
    };
    // Tenant a's three runs (6 ms between them) paused before b's one (2 ms): b's resumes first.
    await Promise.all([meter.run('a', unit('a1')), meter.run('a', unit('a2')), meter.run('a', unit('a3')), meter.run('b', unit('b1'))]);
    expect(order).toEqual(['b1', 'a1', 'a2', 'a3']);
  });
});
