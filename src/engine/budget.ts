import { DomainError } from '../errors.ts';

/**
 * The most (object, relation) pairs the walk of one check may visit, the pairs it starts from
 * included, whichever path (memory or PostgreSQL) answers it; past that the check is
 * `check-too-complex`. Counted after each depth's arrows have been followed, so both paths refuse
 * the same checks.
 */
export const CHECK_BUDGET = 100_000;

/** The problem of a check refused for its work budget; `why` says which budget. */
export const checkTooComplex = (why: string): DomainError => new DomainError('check-too-complex', `the check ${why}; narrow it or simplify the namespace's arrows`);

/** The problem of a check whose walk would visit more than `budget` pairs. */
export const tooManyPairs = (budget = CHECK_BUDGET): DomainError => checkTooComplex(`would visit more than ${budget} (object, relation) pairs`);
