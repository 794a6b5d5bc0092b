/** Scenario noisy_neighbour (bench/noisy.ts): tenant B's checks while tenant A floods the same grantd. */
import type { RunContext } from '../context.ts';
import { noisyNeighbour, type NoisyOutcome } from '../noisy.ts';
import { fmt, type RunStats } from '../scenarios.ts';
import { scenarioFailed } from './shared.ts';

export async function runNoisyNeighbour(ctx: RunContext, databaseUrl: string): Promise<void> {
  const { log } = ctx;
  const { workers, plan, seed } = ctx.options;
  log('scenario noisy_neighbour');
  // A failure here (a load refused, a generator that died) ends this scenario, not the run.
  ctx.results.noisy = await noisyNeighbour({
    root: ctx.resources.snapshot!.dir,
    databaseUrl,
    workers,
    plan,
    workDir: ctx.resources.workDir,
    seed,
    each: ctx.options.noisyEach,
    log,
  }).catch(scenarioFailed(ctx, 'noisy_neighbour', log));
  if (ctx.results.noisy) recordNoisy(ctx, ctx.results.noisy);
}

/** B's row: its checks under A; B alone and A's answers in the note. */
function recordNoisy(ctx: RunContext, n: NoisyOutcome): void {
  const a = (Object.keys(n.a) as (keyof NoisyOutcome['a'])[])
    .map((w) => `${w} ${n.aRates[w]}/s ${JSON.stringify(n.a[w].statuses)}${unanswered(n.a[w]) > 0 ? ` + ${unanswered(n.a[w])} unanswered` : ''}`)
    .join(', ');
  const { created, shape: made, refusals, unexpected } = n.namespaces;
  const shape =
    (made ? `${created} namespaces of ${made.relations} relations x ${made.includes} includes` : 'no namespace accepted') +
    ` (${refusals} refused${unexpected ? `; creation ended by a ${unexpected}` : ''})`;
  ctx.record(
    'noisy_neighbour',
    n.underA,
    `tenant B (${n.bHeld} grants and agents, in memory): single checks at ${n.bRate}/s open loop; B alone p50 ${fmt(n.alone.p50_ms)} p99 ${fmt(n.alone.p99_ms)} ms ` +
      `(errors ${n.alone.errors}), under A (this row) p50 ${fmt(n.underA.p50_ms)} p99 ${fmt(n.underA.p99_ms)} ms (errors ${n.underA.errors}); ` +
      `A's answers, open loop, over the warm-up and runs: ${a}; A-schema: ${shape}; GRANTD_GRAPH_MEMORY=${n.graphMemory}` +
      eachWorkload(n),
  );
}

/**
 * B's p99 under A over all its requests: latencies are those of 2xx answers, so once more than 1%
 * of B's requests got none (stalled past the generator's 10 s, or refused), the 99th percentile is
 * one of those: Infinity.
 */
export const p99UnderA = ({ underA }: NoisyOutcome) => (underA.errors > 0.01 * underA.requests ? Infinity : underA.p99_ms);

/** With --noisy-each: B's p50 and p99 under each of A's workloads by itself. */
const eachWorkload = ({ underEach }: NoisyOutcome) => {
  const each = Object.entries(underEach).map(([w, r]) => `${w} p50 ${fmt(r.p50_ms)} p99 ${fmt(r.p99_ms)} ms (errors ${r.errors})`);
  return each.length > 0 ? `; B under each of A's workloads by itself: ${each.join(', ')}` : '';
};

/** Requests that got no answer at all: socket errors and timeouts. */
const unanswered = (stats: RunStats) =>
  stats.errors - Object.entries(stats.statuses ?? {}).reduce((sum, [status, n]) => sum + (Number(status) >= 300 ? n : 0), 0);
