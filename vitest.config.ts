import { configDefaults, defineConfig } from 'vitest/config';
import { GRANTD_V8_FLAGS } from './src/cluster/primary.ts';

// The whole suite runs twice: on an embedded PostgreSQL this run starts itself, and on the
// PostgreSQL at 127.0.0.1:5432 (GRANTD_TEST_PG_URL), each in a database of its own. The stall test
// is a project of its own (`stall`, on 127.0.0.1:5432), which `npm test` runs after the others,
// alone: it measures the event loop, which files run beside it would load
// (docs/decisions.md#one-meter-for-all-work-in-memory), in a process with `grantd serve`'s V8 flags
// (the collector's pauses are part of what it measures).
const STALL_TEST = 'test/http/stall.test.ts';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // The stall project's run (after the others) writes its own report: .ci/run adds the two up.
    reporters: ['default', ['json', { outputFile: process.env.GRANTD_TEST_REPORT ?? 'test-artifacts/vitest-results.json' }]],
    projects: [
      {
        extends: true,
        test: {
          name: 'embedded',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, STALL_TEST],
          globalSetup: ['test/setup/embedded-database.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, STALL_TEST],
          globalSetup: ['test/setup/server-database.ts'],
        },
      },
      {
        extends: true,
        test: { name: 'stall', include: [STALL_TEST], globalSetup: ['test/setup/server-database.ts'], execArgv: GRANTD_V8_FLAGS },
      },
    ],
  },
});
