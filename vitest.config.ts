import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { GRANTD_V8_FLAGS } from './src/cluster/primary.ts';
import { testFilesByDatabase } from './test/setup/test-files.ts';

// Every file that needs a database runs twice: on an embedded PostgreSQL this run starts itself, and
// on the PostgreSQL at 127.0.0.1:5432 (GRANTD_TEST_PG_URL), each in a database of its own. Files that
// need none (the engine's, the caches'...) run once, in the project `unit`. The stall test
// is a project of its own (`stall`, on 127.0.0.1:5432), which `npm test` runs after the others,
// alone: it measures the event loop, which files run beside it would load
// (docs/decisions.md#one-meter-for-all-work-in-memory), in a process with `grantd serve`'s V8 flags
// (the collector's pauses are part of what it measures).
const STALL_TEST = 'test/http/stall.test.ts';
const { withDatabase, without } = testFilesByDatabase('test', [STALL_TEST]);

export default defineConfig({
  test: {
    testTimeout: 30_000,
    // Two files at a time even on 2 cores (vitest's default would be one): a file mostly waits, on
    // PostgreSQL, on the servers and commands it starts, and on loading its modules, and the suite
    // took 26 of CI's 30 minutes one file at a time (docs/development.md#the-tests).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    hookTimeout: 120_000,
    // The stall project's run (after the others) writes its own report: .ci/run adds the two up.
    reporters: ['default', ['json', { outputFile: process.env.GRANTD_TEST_REPORT ?? 'test-artifacts/vitest-results.json' }]],
    projects: [
      { extends: true, test: { name: 'unit', include: without } },
      { extends: true, test: { name: 'embedded', include: withDatabase, globalSetup: ['test/setup/embedded-database.ts'] } },
      { extends: true, test: { name: 'postgres', include: withDatabase, globalSetup: ['test/setup/server-database.ts'] } },
      {
        extends: true,
        test: { name: 'stall', include: [STALL_TEST], globalSetup: ['test/setup/server-database.ts'], execArgv: GRANTD_V8_FLAGS },
      },
    ],
  },
});
