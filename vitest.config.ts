import { configDefaults, defineConfig } from 'vitest/config';

// The whole suite runs twice: on an embedded PostgreSQL this run starts itself, and on the
// PostgreSQL at 127.0.0.1:5432 (GRANTD_TEST_PG_URL), each in a database of its own. The stall test
// runs once, in `postgres`: it measures the engine, the same over either database, and two copies
// run at once by the projects would each load the cores the other measures
// (docs/decisions.md#one-meter-for-all-work-in-memory).
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: 'test-artifacts/vitest-results.json' }]],
    projects: [
      {
        extends: true,
        test: {
          name: 'embedded',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/http/stall.test.ts'],
          globalSetup: ['test/setup/embedded-database.ts'],
        },
      },
      { extends: true, test: { name: 'postgres', include: ['test/**/*.test.ts'], globalSetup: ['test/setup/server-database.ts'] } },
    ],
  },
});
