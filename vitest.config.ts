import { defineConfig } from 'vitest/config';

// Vitest 5's reporter prints failures with Map.groupBy, which Node 20 lacks (Node 21+ has it).
type GroupBy = <K, T>(items: Iterable<T>, key: (item: T, index: number) => K) => Map<K, T[]>;
const MapWithGroupBy = Map as unknown as { groupBy?: GroupBy };
if (typeof MapWithGroupBy.groupBy !== 'function') {
  MapWithGroupBy.groupBy = <K, T>(items: Iterable<T>, key: (item: T, index: number) => K): Map<K, T[]> => {
    const groups = new Map<K, T[]>();
    let index = 0;
    for (const item of items) {
      const k = key(item, index++);
      groups.set(k, [...(groups.get(k) ?? []), item]);
    }
    return groups;
  };
}

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
