import type { Plugin } from 'vitest/config';
import { defineConfig } from 'vitest/config';

/**
 * The tests `npm run mutate` runs against each mutant of src/engine and src/http/cursor.ts: those
 * that need no database (no globalSetup): a mutant costs seconds, not a migration. Left out for
 * needing PostgreSQL: test/engine/check.test.ts, property.test.ts, property-rules.test.ts,
 * rule-cases.test.ts (rule-cases-memory.test.ts runs its cases in an index), rules.test.ts and
 * subjects-explain.test.ts; reference.test.ts tests the tests' reference evaluator, not src/.
 */
const MUTATION_TESTS = [
  'test/engine/boundary-heap.test.ts',
  'test/engine/budget.test.ts',
  'test/engine/bulk-checks.test.ts',
  'test/engine/check-steps.test.ts',
  'test/engine/check-time.test.ts',
  'test/engine/definition-checks.test.ts',
  'test/engine/edge-lists.test.ts',
  'test/engine/engine.test.ts',
  'test/engine/explain.test.ts',
  'test/engine/explain-rules.test.ts',
  'test/engine/explain-walk.test.ts',
  'test/engine/grant-index.test.ts',
  'test/engine/grant-windows.test.ts',
  'test/engine/id-ranks.test.ts',
  'test/engine/index-checker.test.ts',
  'test/engine/listing-walks.test.ts',
  'test/engine/marked-nodes.test.ts',
  'test/engine/model-rules.test.ts',
  'test/engine/nearest.test.ts',
  'test/engine/rule-cases-memory.test.ts',
  'test/engine/rule-check.test.ts',
  'test/engine/rule-parts.test.ts',
  'test/engine/schema.test.ts',
  'test/engine/slot-table.test.ts',
  'test/engine/work-meter.test.ts',
  'test/http/cursor.test.ts',
];

/**
 * Stryker's vitest runner 9.6.1 (10.x needs Node 22) runs a mutant's tests by a name pattern that
 * joins a test's suite names and its own with spaces. Vitest 4 (what Node 20 runs) joins them so
 * too; Vitest 5 joins them with " > ", where the pattern matched no test and every mutant survived.
 * This lets either match, so that moving to Vitest 5 with Node 22 does not silently break mutation runs.
 */
const namesJoinedEitherWay: Plugin = {
  name: 'stryker-test-names',
  configureVitest({ project }) {
    let pattern: RegExp | undefined;
    Object.defineProperty(project.config, 'testNamePattern', {
      get: () => pattern,
      set: (given: RegExp | string | undefined) => {
        pattern = given === undefined ? undefined : new RegExp(String(given instanceof RegExp ? given.source : given).replaceAll(' ', '(?: | > )'));
      },
    });
  },
};

export default defineConfig({
  plugins: [namesJoinedEitherWay],
  // A quarter of the runs and steps of randomized tests, each run again for every mutant it covers
  // (test/properties.ts `scaled`); `npm test` runs them in full.
  test: { include: MUTATION_TESTS, testTimeout: 30_000, env: { GRANTD_TEST_SCALE: '0.25' } },
});
