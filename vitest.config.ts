import { defineConfig } from 'vitest/config';

// The whole suite runs twice: on an embedded PostgreSQL this run starts itself, and on the
// PostgreSQL at 127.0.0.1:5432 (GRANTD_TEST_PG_URL), each in a database of its own.
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: 'test-artifacts/vitest-results.json' }]],
    projects: [
      { extends: true, test: { name: 'embedded', include: ['test/**/*.test.ts'], globalSetup: ['test/setup/embedded-database.ts'] } },
      { extends: true, test: { name: 'postgres', include: ['test/**/*.test.ts'], globalSetup: ['test/setup/server-database.ts'] } },
    ],
  },
});
