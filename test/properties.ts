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
 * a failure's counterexample (which may hold 70 KB strings) cut short in the report. A failure also
 * names its counterexample's path (FC_PATH, and FC_REPLAY_PATH for fc.commands, see
 * `replayedCommands`): with its FC_SEED, they run that counterexample alone.
 */
export async function assertProperty<Ts extends [unknown, ...unknown[]]>(
  property: fc.IAsyncProperty<Ts>,
  parameters: fc.Parameters<Ts>,
): Promise<void> {
  const seed = propertySeed();
  const { testPath = '', currentTestName = '' } = expect.getState();
  const command = (variables: string) =>
    `replay with ${variables} npx vitest run ${relative(process.cwd(), testPath)} -t '${currentTestName.replaceAll(' > ', ' ')}'`;
  console.info(`fast-check seed ${seed}: ${command(`FC_SEED=${seed}`)}`);
  const path = process.env.FC_PATH;
  try {
    await fc.assert(property, { ...parameters, seed, ...(path === undefined ? {} : { path }), verbose: fc.VerbosityLevel.Verbose });
  } catch (error) {
    const message = (error as Error).message;
    const failedAt = [`FC_SEED=${seed}`];
    const failedPath = /path: "([^"]*)"/.exec(message)?.[1];
    if (failedPath !== undefined) failedAt.push(`FC_PATH=${failedPath}`);
    const replayPath = /replayPath="([^"]*)"/.exec(message)?.[1];
    if (replayPath !== undefined) failedAt.push(`FC_REPLAY_PATH='${replayPath}'`);
    const shown = message.length > 3000 ? `${message.slice(0, 1500)} ... ${message.slice(-1500)}` : message;
    throw new Error(`${shown}\n(${command(failedAt.join(' '))})`, { cause: error });
  }
}

/** fc.commands' constraints with FC_REPLAY_PATH's, which a failed model-based test names to replay its counterexample. */
export function replayedCommands(constraints: fc.CommandsContraints): fc.CommandsContraints {
  const replayPath = process.env.FC_REPLAY_PATH;
  return replayPath === undefined ? constraints : { ...constraints, replayPath };
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
