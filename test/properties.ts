import fc from 'fast-check';
import { relative } from 'node:path';
import { expect } from 'vitest';

/** FC_SEED=<n> replays a property run with that seed; otherwise each run draws its own. */
function propertySeed(): number {
  const given = process.env.FC_SEED;
  if (given === undefined) return Math.floor(Math.random() * 2 ** 31);
  if (!/^-?\d+$/.test(given)) throw new Error(`FC_SEED must be an integer, not ${given}`);
  return Number(given);
}

/**
 * fc.assert with the seed logged, so that any run, failed or not, can be replayed with FC_SEED, and
 * a failure's counterexample (which may hold 70 KB strings) cut short in the report.
 */
export async function assertProperty<Ts extends [unknown, ...unknown[]]>(
  property: fc.IAsyncProperty<Ts>,
  parameters: fc.Parameters<Ts>,
): Promise<void> {
  const seed = propertySeed();
  const { testPath = '', currentTestName = '' } = expect.getState();
  const replay = `replay with FC_SEED=${seed} npx vitest run ${relative(process.cwd(), testPath)} -t '${currentTestName.replaceAll(' > ', ' ')}'`;
  console.info(`fast-check seed ${seed}: ${replay}`);
  try {
    await fc.assert(property, { ...parameters, seed, verbose: fc.VerbosityLevel.Verbose });
  } catch (error) {
    const message = (error as Error).message;
    throw new Error(`${message.length > 3000 ? `${message.slice(0, 1500)} ... ${message.slice(-1500)}` : message}\n(${replay})`, { cause: error });
  }
}

/**
 * `n` runs or steps of a randomized test, times GRANTD_TEST_SCALE (default 1): `npm run mutate` sets
 * it below 1 (vitest.mutation.config.ts), as it runs such a test again for each mutant it covers.
 */
export function scaled(n: number): number {
  const given = process.env.GRANTD_TEST_SCALE;
  if (given === undefined) return n;
  const scale = Number(given);
  if (!(scale > 0 && scale <= 1)) throw new Error(`GRANTD_TEST_SCALE must be in (0, 1], not ${given}`);
  return Math.max(1, Math.round(n * scale));
}
