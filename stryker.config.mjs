// @ts-check
/**
 * `npm run mutate`: mutation testing of the engine and the cursor against the database-free tests
 * (vitest.mutation.config.ts); results in test-artifacts/mutation/. A measurement, not part of
 * `npm test` or CI: docs/decisions.md#mutation-testing.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  mutate: ['src/engine/**/*.ts', 'src/http/cursor.ts'],
  // Not "perTest": the vitest runner 9.6.1 (10.x needs Node 22) names a test "describe test",
  // which Vitest 5 no longer matches (it joins names with " > "), so every filtered run ran no test
  // and every mutant survived. Each mutant runs the test files that import its file instead.
  coverageAnalysis: 'all',
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
