import { afterAll, expect, it } from 'vitest';
import { CheckTimeShares } from '../../src/engine/check-time.ts';
import { GraphStatements, openGraphPool } from '../../src/store/graph-statements.ts';
import { databaseUrl } from '../helpers.ts';

const pool = openGraphPool(databaseUrl(), 2, () => undefined);
afterAll(() => pool.end());

it("counts a tenant's statement time against its share of the time on checks", async () => {
  const checkTime = new CheckTimeShares();
  const statements = new GraphStatements(pool, { checkTime });
  for (let i = 0; i < 10; i++) await statements.query('a', { text: 'SELECT pg_sleep(0.05)' });
  // 500 ms of statements in about as long: past a quarter of the time, so a waits while b's checks
  // are asked for, and b does not.
  expect(checkTime.of('b').wait()).toBe(0);
  expect(checkTime.of('a').wait()).toBeGreaterThan(0);
});
