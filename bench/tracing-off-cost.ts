/**
 * What tracing off costs a call (bench/README.md, `check_tracing_off`): `inSpan`'s off branch timed
 * in a loop, in the bench process, from the grantd build the run measures (its snapshot), where no
 * tracing was ever started.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

type Tracing = typeof import('../src/tracing.ts');

const CALLS = 2_000_000;
const ROUNDS = 5;

/**
 * Nanoseconds a call of `inSpan` with tracing off, arguments shaped as the check routes' (a name,
 * an attributes object made per call, a closure returning the work's promise): the median of
 * ROUNDS loops of CALLS after one discarded loop (the JIT's). An upper bound of the off branch:
 * it includes the call of `work` and the attributes object, which a check with tracing off skips.
 */
export async function inSpanOffNs(grantdRoot: string): Promise<number> {
  const { inSpan, tracingOn } = (await import(pathToFileURL(join(grantdRoot, 'dist', 'src', 'tracing.js')).href)) as Tracing;
  if (tracingOn()) throw new Error('tracing is on in the bench process: the off branch cannot be timed');
  const answer = Promise.resolve(true);
  const work = () => answer;
  const relations = ['viewer', 'editor', 'owner'];
  const loop = () => {
    let same = 0;
    const started = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) if (inSpan('grantd.check', { 'grantd.relation': relations[i % 3]! }, work) === answer) same++;
    const ns = Number(process.hrtime.bigint() - started) / CALLS;
    // Off, inSpan hands back the work's own promise: anything else means it was not the off branch that ran.
    if (same !== CALLS) throw new Error(`inSpan off returned another promise ${CALLS - same} times`);
    return ns;
  };
  loop();
  const rounds = Array.from({ length: ROUNDS }, loop).sort((a, b) => a - b);
  return rounds[Math.floor(ROUNDS / 2)]!;
}
