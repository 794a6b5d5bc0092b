import { DEFAULT_CHECK_BUDGET, isCheckTooComplex } from '../engine/budget.ts';
import type { CheckAnswer, HoldersQuery, ReachableQuery } from '../engine/engine.ts';
import { explainCheck, indexGraph, IndexChanged, type Explanation } from '../engine/explain.ts';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import type { Triple } from '../engine/refs.ts';
import type { CompiledSchema } from '../engine/schema.ts';
import { masksAdmit } from '../engine/scope.ts';
import type { Slice, WorkMeter } from '../engine/work-meter.ts';
import type { HeldTenant, HeldTenants } from './held-tenants.ts';

/**
 * Answers checks and listing walks of a tenant held in memory (HeldTenants) and current, without a
 * round trip; null when the tenant is not (the database answers instead). An answer is the held
 * grants' and the held agents' masks together, read from one state of the tenant (a mask is asked
 * right before its check, in the same turn of the event loop as the walk), so a mask and the grants
 * it masks never come from two states. Answers are not cached: a check in memory costs about what
 * a cache lookup would. The grants in force are those of `clock`'s instant when the walk begins.
 *
 * Every read of a held tenant goes through `inMemory` (or `checkNow`'s `meter.now`): the work meter
 * runs it in slices charged to the tenant (docs/decisions.md#one-meter-for-all-work-in-memory).
 */
export class MemoryChecker {
  /**
   * Measured here: in memory, a walked pair about 0.2 us and a candidate about 4.5 (its id read
   * from the database ~1.3 us, the check about 3), so a check costs about 20 pairs.
   */
  readonly pairsPerCheck = 20;
  /**
   * A listing walk here goes 2.5 times as far as the engine's budgets say (25,000 pairs for the first
   * walk): a pair costs about 0.1 us, so a walk that far takes a few milliseconds, less than what it
   * saves when it succeeds (a round trip for candidates, their checks and a second walk), and a
   * subject reaching 10,000-20,000 objects is listed by one walk.
   */
  readonly walkScale = 2.5;
  private readonly checkBudget: number;
  private readonly clock: WallClock;

  constructor(
    private readonly tenants: HeldTenants,
    /** The process's work in memory, shared between tenants (WorkMeter). */
    private readonly meter: WorkMeter,
    { checkBudget = DEFAULT_CHECK_BUDGET, clock = SYSTEM_CLOCK }: { checkBudget?: number | undefined; clock?: WallClock } = {},
  ) {
    this.checkBudget = checkBudget;
    this.clock = clock;
  }

  /** Whether the tenant is held (current or about to be caught up). */
  holds(tenantId: string): boolean {
    return this.tenants.holds(tenantId);
  }

  /** This node changed the tenant's data: its next check waits for a catch-up. */
  invalidate(tenantId: string): void {
    this.tenants.invalidate(tenantId);
  }

  /** Each query's answer, or null when the tenant is not held and current. */
  check(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<CheckAnswer[] | null> {
    return this.inMemory(tenantId, (held, slice) => {
      const admits = (q: Triple) => masksAdmit(q.subject, q.object.ns, q.relation, (id) => held.agents.get(id));
      return held.index.checkAll(schema, queries, this.checkBudget, { admits, slice });
    });
  }

  /**
   * One query's answer at once, with no promise made or awaited, when the tenant is held and current,
   * its checks need not wait their turn and no window event is due; undefined otherwise (then
   * `check`). The same answer as `check` gives for [query]: the mask asked right before the walk, in the same state.
   */
  checkNow(tenantId: string, schema: CompiledSchema, query: Triple): CheckAnswer | undefined {
    const held = this.tenants.currentNow(tenantId);
    if (!held) return undefined;
    return this.meter.now(tenantId, () => {
      if (!held.index.advance(this.clock.now(), WINDOW_EVENTS_PER_UNIT)) return undefined;
      try {
        return (
          masksAdmit(query.subject, query.object.ns, query.relation, (id) => held.agents.get(id)) && held.index.check(schema, query, this.checkBudget)
        );
      } catch (error) {
        if (!isCheckTooComplex(error)) throw error;
        return error;
      }
    });
  }

  /**
   * The listing walk's ids (null past its budget, see Checker.reachable), or null when the tenant is
   * not held and current, its grants changed while the namespace's ids were ranked in slices, or the
   * walk may go further than one unit of work in memory (MAX_WALK_IN_MEMORY): PostgreSQL walks it then.
   */
  reachable(tenantId: string, schema: CompiledSchema, query: ReachableQuery): Promise<{ ids: string[] | null } | null> {
    if (query.budget > MAX_WALK_IN_MEMORY) return Promise.resolve(null);
    return this.inMemory(tenantId, async (held, slice) => {
      if (!masksAdmit(query.subject, query.namespace, query.relation, (id) => held.agents.get(id))) return { ids: [] };
      if (!(await held.index.rankInSlices(query.namespace, slice))) return null;
      return { ids: held.index.reachable(schema, query) };
    });
  }

  /** The listing walk from an object (see Checker.holders), or null as for `reachable`. */
  holders(tenantId: string, schema: CompiledSchema, query: HoldersQuery): Promise<{ ids: string[] | null } | null> {
    if (query.budget > MAX_WALK_IN_MEMORY) return Promise.resolve(null);
    return this.inMemory(tenantId, async (held, slice) => {
      if (!(await held.index.rankInSlices(query.namespace, slice))) return null;
      const scopeOf = (id: string) => held.agents.get(id);
      const admits = (id: string) => masksAdmit({ ns: query.namespace, id }, query.object.ns, query.relation, scopeOf);
      return { ids: held.index.holders(schema, query, admits) };
    });
  }

  /**
   * Why the check is allowed or denied, or null when the tenant is not held and current. The walk
   * gives way between pairs; when the grants change meanwhile it is explained again from the start,
   * and after EXPLAIN_TRIES the database explains it (from one snapshot).
   */
  explain(tenantId: string, schema: CompiledSchema, query: Triple): Promise<Explanation | null> {
    return this.inMemory(tenantId, async (held, slice) => {
      for (let tries = 1; ; tries++) {
        try {
          const graph = indexGraph(held.index, (id) => held.agents.get(id), slice);
          return await explainCheck(graph, schema, query, this.checkBudget, this.clock.now());
        } catch (error) {
          if (!(error instanceof IndexChanged)) throw error;
          if (tries === EXPLAIN_TRIES || !(await this.brought(tenantId, held, slice))) return null;
        }
      }
    });
  }

  /**
   * Runs `work` on the held tenant under the meter, once it is current and its lists are brought to
   * the clock (window events applied a batch a unit); null when the tenant is not held and current.
   */
  private inMemory<T>(tenantId: string, work: (held: HeldTenant, slice: Slice) => T | Promise<T>): Promise<T | null> {
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
