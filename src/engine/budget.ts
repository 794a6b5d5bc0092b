import { DomainError } from '../errors.ts';

/**
 * The most work one check may do, in steps, whichever path (memory or PostgreSQL) answers it: the
 * (object, relation) pairs of each level its walk expands, plus the grants read from them through
 * arrows (once per pair and arrow relation). Both walks count the same steps and compare them with
 * the budget once a level is expanded, so both refuse the same checks. Real models take tens; a dense
 * fan-out graph (every object the parent of every other, several arrows per relation) millions, at
 * ~0.05 us a step in memory: the default bounds a check near a millisecond of the event loop
 * (docs/decisions.md#one-work-budget-for-both-walks). The default of GRANTD_CHECK_BUDGET (src/config.ts).
 */
export const DEFAULT_CHECK_BUDGET = 25_000;

/**
 * The problem of a check whose walk would take more than its budget of steps. Made without a stack
 * trace: a bulk on a fan-out graph makes one an item, and capturing the stack was 1.4% of a worker's
 * time under noisy_neighbour's load (docs/measurements.md, session 32); a problem's stack is never shown.
 */
class OverBudget extends DomainError {
  constructor(budget: number) {
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(
        'check-too-complex',
        `the check would take more than ${budget} steps ((object, relation) pairs expanded and grants followed), the work budget of one check; narrow it or simplify the namespace's arrows`,
      );
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
  }
}

/** The problem of a check whose walk would take more than `budget` steps. */
export const overBudget = (budget: number): DomainError => new OverBudget(budget);

export const isCheckTooComplex = (error: unknown): error is DomainError => error instanceof DomainError && error.type === 'check-too-complex';

/**
 * The problem of a check one of whose parts went past what was left of the budget: a part's walk is
 * given the rest and names that, the problem names the check's whole budget. Any other problem (a
 * check too deep to decide, say) is the check's as it is; any other error passes on.
 */
export function wholeBudgetProblem(error: unknown, budget: number): DomainError {
  if (error instanceof OverBudget) return overBudget(budget);
  if (isCheckTooComplex(error)) return error;
  throw error;
}
