import { DEFAULT_CHECK_BUDGET, isCheckTooComplex } from '../engine/budget.ts';
import type { CheckTimeShares } from '../engine/check-time.ts';
import type { CheckAnswer, HoldersQuery, ReachableQuery } from '../engine/engine.ts';
import { explainCheck, indexGraph, type Explanation } from '../engine/explain.ts';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import type { Triple } from '../engine/refs.ts';
import type { CompiledSchema } from '../engine/schema.ts';
import { masksAdmit } from '../engine/scope.ts';
import type { HeldTenants } from './held-tenants.ts';

/**
 * Answers checks and listing walks of a tenant held in memory (HeldTenants) and current, without a
 * round trip; null when the tenant is not (the database answers instead). An answer is the held
 * grants' and the held agents' masks together, read from one state of the tenant (a mask is asked
 * right before its check, in the same turn of the event loop as the walk), so a mask and the grants
 * it masks never come from two states. Answers are not cached: a check in memory costs about what
 * a cache lookup would. The grants in force are those of `clock`'s instant when the walk begins.
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
    /** The process's time on checks, shared between tenants: a bulk's slices in memory count as its tenant's. */
    private readonly checkTime: CheckTimeShares,
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
  async check(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<CheckAnswer[] | null> {
    const held = await this.tenants.current(tenantId);
    if (!held) return null;
    held.index.advance(this.clock.now());
    const admits = (q: Triple) => masksAdmit(q.subject, q.object.ns, q.relation, (id) => held.agents.get(id));
    return held.index.checkAll(schema, queries, this.checkBudget, { admits, turns: this.checkTime.of(tenantId) });
  }

  /**
   * One query's answer at once, with no promise made or awaited, when the tenant is held and current
   * and its checks need not wait their turn; undefined otherwise (then `check`). The same answer as
   * `check` gives for [query]: the mask asked right before the walk, in the same state.
   */
  checkNow(tenantId: string, schema: CompiledSchema, query: Triple): CheckAnswer | undefined {
    const held = this.tenants.currentNow(tenantId);
    if (!held || this.checkTime.wait(tenantId) > 0) return undefined;
    held.index.advance(this.clock.now());
    const started = performance.now();
    try {
      return (
        masksAdmit(query.subject, query.object.ns, query.relation, (id) => held.agents.get(id)) && held.index.check(schema, query, this.checkBudget)
      );
    } catch (error) {
      if (!isCheckTooComplex(error)) throw error;
      return error;
    } finally {
      this.checkTime.spent(tenantId, performance.now() - started);
    }
  }

  /** The listing walk's ids (null past its budget, see Checker.reachable), or null when the tenant is not held and current. */
  async reachable(tenantId: string, schema: CompiledSchema, query: ReachableQuery): Promise<{ ids: string[] | null } | null> {
    const held = await this.tenants.current(tenantId);
    if (!held) return null;
    if (!masksAdmit(query.subject, query.namespace, query.relation, (id) => held.agents.get(id))) return { ids: [] };
    held.index.advance(this.clock.now());
    return { ids: held.index.reachable(schema, query) };
  }

  /** The listing walk from an object (see Checker.holders), or null when the tenant is not held and current. */
  async holders(tenantId: string, schema: CompiledSchema, query: HoldersQuery): Promise<{ ids: string[] | null } | null> {
    const held = await this.tenants.current(tenantId);
    if (!held) return null;
    const scopeOf = (id: string) => held.agents.get(id);
    const admits = (id: string) => masksAdmit({ ns: query.namespace, id }, query.object.ns, query.relation, scopeOf);
    held.index.advance(this.clock.now());
    return { ids: held.index.holders(schema, query, admits) };
  }

  /** Why the check is allowed or denied, or null when the tenant is not held and current. */
  async explain(tenantId: string, schema: CompiledSchema, query: Triple): Promise<Explanation | null> {
    const held = await this.tenants.current(tenantId);
    if (!held) return null;
    // Every read answers at once (no await gives way to a catch-up), so the whole walk sees one state of the grants.
    const now = this.clock.now();
    held.index.advance(now);
    return explainCheck(
      indexGraph(held.index, (id) => held.agents.get(id)),
      schema,
      query,
      this.checkBudget,
      now,
    );
  }
}
