import { DomainError } from '../errors.ts';

/**
 * The most work one check may do, in steps: (object, relation) pairs visited plus grants followed
 * through arrows. Real models take tens; a dense fan-out graph (every object the parent of every
 * other, several arrows per relation) can take millions, which in memory is ~0.1 us a step, so the
 * default bounds a check near a few milliseconds of the event loop. Configurable (GRANTD_CHECK_BUDGET).
 */
export const DEFAULT_CHECK_BUDGET = 25_000;

export function checkTooComplex(budget: number): DomainError {
  return new DomainError(
    'check-too-complex',
    `answering would take more than ${budget} steps ((object, relation) pairs visited and grants followed), the work budget of one check`,
  );
}

export const isCheckTooComplex = (error: unknown): error is DomainError =>
  error instanceof DomainError && error.type === 'check-too-complex';
