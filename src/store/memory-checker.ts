import { DEFAULT_CHECK_BUDGET } from '../engine/budget.ts';
import type { CheckAnswer, Checker, CheckResolver, CheckResponse, Explainer, HoldersQuery, ListingWalks, ReachableQuery } from '../engine/checker.ts';
import { IndexChanged, type Explanation } from '../engine/explain.ts';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import { IndexChecker } from '../engine/index-checker.ts';
import type { Triple } from '../engine/refs.ts';
import type { CompiledSchema } from '../engine/schema.ts';
import type { Slice, WorkMeter } from '../engine/work-meter.ts';
import type { HeldTenant, HeldTenants } from './held-tenants.ts';

/** Where what memory does not answer goes: the answer cache and PostgreSQL (src/store/check-router.ts). */
export type MemoryFallback = Pick<Checker, 'checks' | 'walks' | 'explainer'>;

/**
 * Answers checks, listing walks and explanations of a tenant held in memory (HeldTenants) and
 * current, without a round trip, through the index-backed checker (IndexChecker); hands the rest to
 * its fallback: a tenant not held or not current, a walk that may go further than one unit of work
 * in memory. An answer is the held grants' and the held agents' masks together, read from one state
 * of the tenant (a mask is asked right before its check, in the same turn of the event loop as the
 * walk), so a mask and the grants it masks never come from two states. Answers are not cached: a
 * check in memory costs about what a cache lookup would. The grants in force are those of `clock`'s
 * instant when the walk begins.
 *
 * The invariant of the work meter (docs/decisions.md#one-meter-for-all-work-in-memory): every method
 * that reads a held tenant does so through `inMemory` (WorkMeter.run, in slices charged to the
 * tenant) or, for `checkNow`, WorkMeter.now; a method added here keeps to that.
 */
export class MemoryChecker implements CheckResolver, ListingWalks, Explainer {
  private readonly index: IndexChecker;
  private readonly clock: WallClock;

  constructor(
    private readonly tenants: HeldTenants,
    /** The process's work in memory, shared between tenants (WorkMeter). */
    private readonly meter: WorkMeter,
    private readonly fallback: MemoryFallback,
    { checkBudget = DEFAULT_CHECK_BUDGET, clock = SYSTEM_CLOCK }: { checkBudget?: number | undefined; clock?: WallClock } = {},
  ) {
    this.index = new IndexChecker(checkBudget);
    this.clock = clock;
  }

  /** This node changed the tenant's data: its next check waits for a catch-up. */
  invalidate(tenantId: string): void {
    this.tenants.invalidate(tenantId);
  }

  async check(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<CheckResponse> {
    const answered = await this.inMemory(tenantId, (held, slice) => this.index.check(held, schema, queries, slice));
    return answered ?? this.fallback.checks.check(tenantId, schema, queries);
  }

  /**
   * One query's answer at once, with no promise made or awaited, when the tenant is held and current,
   * the event loop's turn has time left, its checks need not wait their turn, no window event is due
   * and it fits in a slice (a relation with rules may not: IndexChecker.checkOne); undefined
   * otherwise (then `check`). The same answer as `check` gives for [query]: the mask asked right
   * before the walk, in the same state.
   */
  checkNow(tenantId: string, schema: CompiledSchema, query: Triple): CheckAnswer | undefined {
    const held = this.tenants.currentNow(tenantId);
    if (!held) return undefined;
    return this.meter.now(tenantId, () =>
      held.index.advance(this.clock.now(), WINDOW_EVENTS_PER_UNIT) ? this.index.checkOne(held, schema, query) : undefined,
    );
  }

  /**
   * The listing walk in memory; PostgreSQL's when the tenant is not held and current, its grants
   * changed while the namespace's ids were ranked in slices, or the walk may go further than one
   * unit of work in memory (MAX_WALK_IN_MEMORY).
   */
  async reachable(tenantId: string, schema: CompiledSchema, query: ReachableQuery): Promise<string[] | null> {
    const walked =
      query.budget > MAX_WALK_IN_MEMORY ? null : await this.inMemory(tenantId, (held, slice) => this.index.reachable(held, schema, query, slice));
    return walked ? walked.ids : this.fallback.walks.reachable(tenantId, schema, query);
  }

  /** The listing walk from an object, in memory or else PostgreSQL's, as for `reachable`. */
  async holders(tenantId: string, schema: CompiledSchema, query: HoldersQuery): Promise<string[] | null> {
    const walked =
      query.budget > MAX_WALK_IN_MEMORY ? null : await this.inMemory(tenantId, (held, slice) => this.index.holders(held, schema, query, slice));
    return walked ? walked.ids : this.fallback.walks.holders(tenantId, schema, query);
  }

  pairsPerCheck(tenantId: string): number {
    return this.tenants.holds(tenantId) ? this.index.pairsPerCheck : this.fallback.walks.pairsPerCheck(tenantId);
  }

  walkScale(tenantId: string): number {
    return this.tenants.holds(tenantId) ? this.index.walkScale : this.fallback.walks.walkScale(tenantId);
  }

  /**
   * Why the check is allowed or denied. The walk gives way between pairs; when the grants change
   * meanwhile it is explained again from the start, and after EXPLAIN_TRIES (or for a tenant not
   * held and current) the database explains it, from one snapshot.
   */
  async explain(tenantId: string, schema: CompiledSchema, query: Triple): Promise<Explanation> {
    const explained = await this.inMemory(tenantId, async (held, slice) => {
      for (let tries = 1; ; tries++) {
        try {
          return await this.index.explain(held, schema, query, this.clock.now(), slice);
        } catch (error) {
          if (!(error instanceof IndexChanged)) throw error;
          if (tries === EXPLAIN_TRIES || !(await this.brought(tenantId, held, slice))) return null;
        }
      }
    });
    return explained ?? this.fallback.explainer.explain(tenantId, schema, query);
  }

  /**
   * Runs `work` on the held tenant under the meter, once it is current and its lists are brought to
   * the clock (window events applied a batch a unit); null when the tenant is not held and current.
   */
  private inMemory<T>(tenantId: string, work: (held: HeldTenant, slice: Slice) => T | Promise<T>): Promise<T | null> {
    // A tenant not held has no work in memory: it does not wait for a turn of the meter (behind the
    // loads' units and every run waiting) to learn so. In many_tenants that wait was most of a cold tenant's first check.
    if (!this.tenants.heldElseUsed(tenantId)) return Promise.resolve(null);
    return this.meter.run(tenantId, async (slice) => {
      const held = await slice.outside(this.tenants.current(tenantId));
      if (!held || !(await this.brought(tenantId, held, slice))) return null;
      return work(held, slice);
    });
  }

  /** Applies the window events due, a batch a unit, and tells whether the tenant is still held and current. */
  private async brought(tenantId: string, held: HeldTenant, slice: Slice): Promise<boolean> {
    const now = this.clock.now();
    while (!held.index.advance(now, WINDOW_EVENTS_PER_UNIT)) {
      await slice.pause();
      if (this.tenants.currentNow(tenantId) !== held) return false;
    }
    return true;
  }
}

/**
 * The longest listing walk done in memory, in steps: one unit of work, which runs whole (a few
 * milliseconds: the first walk of a listing, 2.5 times the engine's 10,000). A listing's second,
 * longer walk (up to 200,000) is PostgreSQL's, off the event loop.
 */
const MAX_WALK_IN_MEMORY = 25_000;
/** Window events applied in one unit of work: each costs about a microsecond. */
const WINDOW_EVENTS_PER_UNIT = 2_000;
/** Explanations of a tenant whose grants keep changing under them, before the database explains instead. */
const EXPLAIN_TRIES = 3;
