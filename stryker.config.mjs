// @ts-check
/**
 * `npm run mutate`: mutation testing of the engine and the cursor against the database-free tests
 * (vitest.mutation.config.ts); results in test-artifacts/mutation/. Not part of `npm test` or CI
 * (a whole run takes longer than CI may), and it fails under a score of 80 %:
 * docs/decisions.md#mutation-testing.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  mutate: ['src/engine/**/*.ts', 'src/http/cursor.ts'],
  // Each mutant runs the tests that ran its code (vitest.mutation.config.ts makes their names match).
  coverageAnalysis: 'perTest',
  // The score of the mutants a run measures (all of them without --mutate): under 80 % the run fails.
  thresholds: { high: 90, low: 80, break: 80 },
  // Mutants of code run while files load (schemas and cursors the test files build up front,
  // module constants) would run every test file each: 16% of the mutants, 76% of the time.
  ignoreStatic: true,
  // Two cores shared with other work.
  concurrency: 1,
  incremental: true,
  incrementalFile: 'test-artifacts/mutation/incremental.json',
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'test-artifacts/mutation/index.html' },
  jsonReporter: { fileName: 'test-artifacts/mutation/mutation.json' },
  tempDirName: 'test-artifacts/stryker-tmp',
  ignorePatterns: ['dist', 'test-artifacts', 'bench-scratch', '.grantd'],
};
