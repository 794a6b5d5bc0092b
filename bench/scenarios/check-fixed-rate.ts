/** Scenario check_fixed_rate: the check at a fixed offered rate, open loop, with grantd's GC pauses over it, and bare Express on the same load. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunContext } from '../context.ts';
import { gcCounts, gcPausesBetween } from '../gc-pauses.ts';
import { openLoopInChild } from '../open-loop.ts';
import { fmt, measure, type RunStats } from '../scenarios.ts';
import { CLOSED_LOOP, grantdHeaders, headersFor, withExpress, withGrantd, type DatasetContext } from './shared.ts';

/** check_fixed_rate's offered load, requests a second. */
const FIXED_RATE = 1000;

export async function runCheckFixedRate(ctx: RunContext, { databaseUrl, key }: DatasetContext): Promise<void> {
  const { log, results } = ctx;
  const { plan } = ctx.options;
  log('scenario check_fixed_rate');
  const bodiesFile = join(ctx.resources.workDir, 'check-bodies.json');
  writeFileSync(bodiesFile, JSON.stringify(ctx.bodies.checkBodies));
  // Each server first answers a closed loop of 64 connections for the warm-up's time: a server in
  // service has answered far more than the 2,000 checks of the open loop's own warm-up, and a cold
  // one still compiles its hot paths in run 1 (bench/README.md#the-fixed-rate-warm-up).
  const warmUp = (url: string, headers: Record<string, string>) =>
    openLoopInChild({ url, path: '/v1/check', headers, bodiesFile, connections: 64, durationS: plan.warmupS });
  const fixedRate = (label: string, url: string, headers: Record<string, string>) =>
    measure(label, log, plan, (durationS) => openLoopInChild({ url, path: '/v1/check', headers, bodiesFile, rate: FIXED_RATE, durationS }));
  const [fixed, pauses] = await withGrantd(ctx, databaseUrl, key, async (api) => {
    await warmUp(api.url, headersFor(api));
    const before = await gcCounts(api.url);
    const measured = await fixedRate('check_fixed_rate grantd', api.url, headersFor(api));
    return [measured, gcPausesBetween(before, await gcCounts(api.url), FIXED_RATE)] as const;
  });
  const requests = fixed.runs.reduce((sum, run) => sum + (run.requests ?? 0), 0);
  results.fixedRateGcShare = (100 * pauses.delayedAtMost) / requests;
  results.fixedRateLongPauses = pauses.long;
  // The same load against the bare Express app: the floor of the load generator and of Node's HTTP layer.
  results.peers.express_fixed_rate = (
    await withExpress(ctx, async (ex) => {
      await warmUp(ex.url, grantdHeaders(key));
      return fixedRate('check_fixed_rate express', ex.url, grantdHeaders(key));
    })
  ).median;
  const floor = results.peers.express_fixed_rate as RunStats;
  ctx.record(
    'check_fixed_rate',
    fixed.median,
    `offered ${FIXED_RATE.toLocaleString('en')}/s open loop (one request due every millisecond, sent on a free one of 64 keep-alive connections without waiting for answers, or when one is free, timed from when it fell due; generator in its own process), after ${plan.warmupS} s of a ${CLOSED_LOOP}; achieved ${fixed.median.rps.toFixed(0)}/s; ` +
      `garbage collections over the open loop's warm-up and runs: ${pauses.collections}, of them ${pauses.long} over 1 ms, which could have held up at most ${pauses.delayedAtMost} of its ${requests} measured requests; ` +
      `p99.9 ${fmt(fixed.median.p999_ms)} ms; the same load on bare Express: p50 ${fmt(floor.p50_ms)} p99 ${fmt(floor.p99_ms)} p99.9 ${fmt(floor.p999_ms)} ms`,
  );
}
