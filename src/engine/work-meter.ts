import { setImmediate } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import { CheckTimeShares, type CheckTurns } from './check-time.ts';

/**
 * The one way a tenant's work in memory runs (docs/decisions.md#one-meter-for-all-work-in-memory).
 *
 * The invariant it keeps: between two turns of the event loop, the process's work in memory runs for
 * at most one slice (SLICE_MS) and then one unit: the slice is the turn's (LoopTurn), every run's
 * work in memory together (not the requests' own work around it), and a run that finds it spent,
 * starting, resuming or between units, waits for a later turn. So N requests at once hold the loop
 * for a slice and a unit, not N units. Of the runs waiting,
 * the oldest of the tenant with the least recent check time resumes first, so a tenant with many
 * runs waiting delays a quieter one's by one unit, not by all of its own. Every slice is charged to
 * the tenant's share of the process's time (CheckTimeShares), which makes a tenant over its share
 * wait while others ask.
 * A unit is what a work budget bounds: one check, one listing walk, one level of an explanation, a
 * batch of window events or of replayed grants. So no tenant holds the event loop for longer than a
 * slice and a unit, nor takes the cores from the others for long, whatever it asks.
 *
 * A held tenant is read only through MemoryChecker, and every one of its methods that reads it runs
 * through `run` or `now` (the index-backed checker under it, IndexChecker, takes the slice): a new
 * route reads memory through them, so it cannot forget the meter.
 */
export class WorkMeter {
  /** Every run's work in this turn of the event loop. */
  private readonly turn: LoopTurn;

  constructor(
    /** The process's time on checks, in memory and in statements: one account (CheckTimeShares). */
    readonly shares: CheckTimeShares = new CheckTimeShares(),
    sliceMs = SLICE_MS,
    private readonly clock: { now(): number } = performance,
  ) {
    this.turn = new LoopTurn(sliceMs, clock, (tenantId) => shares.recent(tenantId));
  }

  /** Runs the tenant's work once its turn comes; `work` asks its slice for a checkpoint between units. */
  async run<T>(tenantId: string, work: (slice: Slice) => Promise<T> | T): Promise<T> {
    const turns = this.shares.of(tenantId);
    const wait = turns.wait();
    if (wait > 0) await sleep(wait);
    const slice = new Slice(tenantId, turns, this.turn, this.clock);
    try {
      await slice.checkpoint();
      return await work(slice);
    } finally {
      slice.end();
    }
  }

  /**
   * Runs one unit at once, charged to the tenant and to the turn, unless the turn's slice is spent or
   * the tenant must wait its turn: then undefined (and `run`, which waits). A quiet tenant's check
   * runs at once in a turn that has time left, and otherwise waits for at most one unit of each
   * tenant waiting before it.
   */
  now<T>(tenantId: string, unit: () => T): T | undefined {
    const started = this.clock.now();
    if (this.turn.spentAt(started) || this.shares.wait(tenantId) > 0) return undefined;
    this.turn.opened(started);
    try {
      return unit();
    } finally {
      const ended = this.clock.now();
      this.turn.closed(started, ended);
      this.shares.spent(tenantId, ended - started);
    }
  }

  /** A slice for work of its own, outside any tenant's account (a model file's checks in `grantd test`, tests). */
  static unmetered(sliceMs = SLICE_MS): Slice {
    return new Slice(UNMETERED, { wait: () => 0, spent: () => undefined }, new LoopTurn(sliceMs), performance);
  }
}

/**
 * The current turn of the event loop, as the work in memory sees it: it began when the first run
 * worked in it, and ends at the loop's next check phase, where the immediates run (where a
 * paused run resumes). Its slice is every run's work in memory together: what runs charged in the
 * turn, and the time since each run now working began (runs interleave within a turn, one awaiting
 * while another works, so a run's open time may hold another's: counted twice, never not at all).
 * The requests' own work between (reading, parsing, answering) is not the slice's: counting it
 * sent most checks of a busy process through the meter's queue for nothing
 * (docs/decisions.md#one-meter-for-all-work-in-memory).
 */
export class LoopTurn {
  private inTurn = false;
  /** Work in memory charged in this turn, ms. */
  private worked = 0;
  /** The runs working now (opened, not yet closed): how many, and the sum of when each began in this turn. */
  private open = 0;
  private openSince = 0;
  /** When this turn's count began: a run open since before (awaiting across turns) counts from then. */
  private countedFrom = -Infinity;
  /** The runs that gave way, by tenant (in the order they first waited), each one's runs oldest first. */
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(
    private readonly sliceMs = SLICE_MS,
    private readonly clock: { now(): number } = performance,
    /** A tenant's recent time on checks: of the tenants waiting, the one with the least resumes first. */
    private readonly recent: (tenant: string) => number = () => 0,
  ) {}

  /** A run works (again) from `now`, in this turn (which begins if it had not). */
  opened(now: number): void {
    this.open += 1;
    this.openSince += now;
    if (this.inTurn) return;
    this.inTurn = true;
    // Queued before any pause of this turn's runs: the runs that gave way resume in a new turn.
    setImmediate(() => {
      this.inTurn = false;
      this.worked = 0;
      this.countedFrom = this.clock.now();
      this.openSince = this.open * this.countedFrom;
    });
  }

  /** The run that worked from `since` stops at `now` (pauses, awaits outside, ends): its time is the turn's. */
  closed(since: number, now: number): void {
    const from = Math.max(since, this.countedFrom);
    this.open -= 1;
    this.openSince -= from;
    this.worked += now - from;
  }

  /** Whether the turn's slice is spent at `now`. */
  spentAt(now: number): boolean {
    return this.inTurn && this.worked + this.open * now - this.openSince >= this.sliceMs;
  }

  /**
   * Resolves in a later turn with time left. Each run that gives way queues one immediate; each
   * immediate, once its turn has time left, resumes the oldest run of the waiting tenant that took
   * the least time lately (the first to wait, among equals), and otherwise waits for the next turn:
   * a quiet tenant's run goes before a busy tenant's, however many of those wait, and once the
   * slice is spent the waiting runs resume one unit a turn.
   */
  giveWay(tenant: string): Promise<void> {
    return new Promise((resume) => {
      const runs = this.waiting.get(tenant);
      if (runs === undefined) this.waiting.set(tenant, [resume]);
      else runs.push(resume);
      setImmediate(() => this.resumeNext());
    });
  }

  private resumeNext(): void {
    if (this.spentAt(this.clock.now())) {
      setImmediate(() => this.resumeNext());
      return;
    }
    let next: string | undefined;
    let least = Infinity;
    for (const tenant of this.waiting.keys()) {
      const recent = this.recent(tenant);
      if (recent < least) [next, least] = [tenant, recent];
    }
    const runs = this.waiting.get(next!)!;
    const resume = runs.shift()!;
    if (runs.length === 0) this.waiting.delete(next!);
    resume();
  }
}

/** The tenant key of the slices outside any tenant's account. */
const UNMETERED = '';

/** A run's time, from its start or its last pause. */
export class Slice {
  private startedAt: number;

  constructor(
    private readonly tenant: string,
    private readonly turns: CheckTurns,
    private readonly turn: LoopTurn,
    private readonly clock: { now(): number },
  ) {
    this.startedAt = this.begin();
  }

  /** Whether the turn's slice is spent, by this run and the others in the same turn: the work pauses at its next checkpoint. */
  due(): boolean {
    return this.turn.spentAt(this.clock.now());
  }

  /**
   * Charges the slice, gives the event loop way and waits the tenant's turn, until a turn with its
   * slice not spent; a new slice starts.
   */
  async pause(): Promise<void> {
    this.charge();
    do {
      const wait = this.turns.wait();
      await (wait > 0 ? sleep(wait) : this.turn.giveWay(this.tenant));
    } while (this.due());
    this.startedAt = this.begin();
  }

  /** Pauses if the slice is spent; true when it did, so that what the work read may have changed meanwhile. */
  async checkpoint(): Promise<boolean> {
    if (!this.due()) return false;
    await this.pause();
    return true;
  }

  /** Awaits `io` (a database read, a catch-up) off the tenant's time on checks. */
  async outside<V>(io: Promise<V>): Promise<V> {
    this.charge();
    try {
      return await io;
    } finally {
      this.startedAt = this.begin();
    }
  }

  /** The run is over: its last slice is charged. */
  end(): void {
    this.charge();
  }

  private charge(): void {
    const now = this.clock.now();
    this.turn.closed(this.startedAt, now);
    this.turns.spent(now - this.startedAt);
    this.startedAt = now;
  }

  /** The run works (again) from now, in the current turn. */
  private begin(): number {
    const now = this.clock.now();
    this.turn.opened(now);
    return now;
  }
}

/**
 * Work written as a generator that yields between its units: `drain` runs it to its end at once
 * (where its caller is one unit already), `inSlices` under a slice, with a checkpoint at each yield.
 */
export type UnitsOfWork = Generator<void, void>;

export function drain(work: UnitsOfWork): void {
  for (let step = work.next(); !step.done; step = work.next());
}

/** Runs the work under `slice`; when it paused and `unchanged` says what the work reads changed meanwhile, stops it there: false. */
export async function inSlices(work: UnitsOfWork, slice: Slice, unchanged: () => boolean = () => true): Promise<boolean> {
  for (let step = work.next(); !step.done; step = work.next()) {
    if ((await slice.checkpoint()) && !unchanged()) {
      work.return();
      return false;
    }
  }
  return true;
}

/** How long a tenant's work runs before it gives way (plus one unit). */
export const SLICE_MS = 2;
