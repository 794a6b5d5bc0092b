import { defineConfig } from 'vitest/config';
import './test/setup/map-group-by.ts';

/**
 * The tests `npm run mutate` runs against each mutant of src/engine and src/http/cursor.ts: those
 * that need no database (no globalSetup), so that a mutant costs about a second, not a migration.
 */
export const MUTATION_TESTS = [
  'test/engine/budget.test.ts',
  'test/engine/check-time.test.ts',
  'test/engine/edge-lists.test.ts',
  'test/engine/engine.test.ts',
  'test/engine/grant-index.test.ts',
  'test/engine/schema.test.ts',
  'test/unit/cursor.test.ts',
];

export default defineConfig({
  test: { include: MUTATION_TESTS, testTimeout: 30_000 },
});
