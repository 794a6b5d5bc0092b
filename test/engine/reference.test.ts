import { describe, expect, it } from 'vitest';
import { referenceCheck, TooComplex, type Triple } from './reference.ts';
import { RULE_CASES } from './rule-cases.ts';

/** The reference evaluator on the cases worked by hand (rule-cases.ts). */
describe('the reference evaluator', () => {
  it.each(RULE_CASES)('$name', ({ definitions, grants, scopes = {}, checks }) => {
    const check = referenceCheck({ definitions, grants, scopes: new Map(Object.entries(scopes)) });
    const answer = (query: Triple) => {
      try {
        return check(...query);
      } catch (error) {
        if (error instanceof TooComplex) return 'too-complex';
        throw error;
      }
    };
    expect(checks.map(([query]) => [query.join(' '), answer(query)])).toEqual(checks.map(([query, want]) => [query.join(' '), want]));
  });
});
