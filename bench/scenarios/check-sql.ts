/** Scenario check_sql (issue 45): the check answered by PostgreSQL, on a grantd that holds nothing in memory. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunContext } from '../context.ts';
import { grantdAnswers } from '../load.ts';
import { openLoopInChild } from '../open-loop.ts';
import { fmt, measure, measureAlternating } from '../scenarios.ts';
import { CLOSED_LOOP, checkSpec, headersFor, ratio, saturating, withGrantd, type DatasetContext } from './shared.ts';

/** The offered rate of check_sql's latency target, requests a second. */
export const SQL_FIXED_RATE = 1000;
/** How long grantd uses an answer PostgreSQL gave (docs/consistency.md#caches-on-a-node). */
const CACHED_ANSWER_S = 0.5;

/**
 * check_sql: the check's load on a grantd started with GRANTD_GRAPH_MEMORY=0, so that PostgreSQL
 * answers every check, its runs alternating with the same load on a second grantd holding the tenant
 * in memory (its peer); then the same checks at an offered 1,000/s (bench/open-loop.ts) on the first.
 *
 * grantd keeps PostgreSQL's answers for 500 ms, so a check repeated within that is a cache hit, not a
 * statement. The load pool's checks are taken once each (the pool of `check` holds some twice), and
 * both loads send them in the pool's order from its start each run, so a check comes again only
 * after a whole pass of the pool; the note gives how long a pass takes at the rates measured, and
 * with it whether any answer could have come from the cache.
 */
export async function runCheckSql(ctx: RunContext, { databaseUrl, key }: DatasetContext): Promise<void> {
  const { log, results } = ctx;
  const { plan } = ctx.options;
  const bodies = [...new Set(ctx.bodies.checkBodies)];
  const spec = { ...checkSpec(ctx), bodies };
  log(`scenario check_sql (a grantd holding nothing, alternating with a grantd holding the tenant, then ${SQL_FIXED_RATE}/s on the first)`);
  const { sql, inMemory, fixedRate, mismatches } = await withGrantd(ctx, databaseUrl, key, (memoryApi) =>
    withGrantd(
      ctx,
      databaseUrl,
      key,
      async (sqlApi) => {
        const mismatches = await modelMismatches(ctx, sqlApi);
        const [sql, inMemory] = await measureAlternating(
          [
            { label: 'check_sql grantd (PostgreSQL)', once: saturating(ctx, 'check_sql', sqlApi, headersFor(sqlApi), spec) },
            { label: 'check_sql peer (in memory)', once: saturating(ctx, 'check_sql in memory', memoryApi, headersFor(memoryApi), spec) },
          ],
          log,
          plan,
        );
        const bodiesFile = join(ctx.resources.workDir, 'check-sql-fixed-rate-bodies.json');
        writeFileSync(bodiesFile, JSON.stringify(bodies));
        const fixedRate = await measure(`check_sql at ${SQL_FIXED_RATE}/s`, log, plan, (durationS) =>
          openLoopInChild({ url: sqlApi.url, path: '/v1/check', headers: headersFor(sqlApi), bodiesFile, rate: SQL_FIXED_RATE, durationS }),
        );
        return { sql: sql!.median, inMemory: inMemory!.median, fixedRate: fixedRate.median, mismatches };
      },
      { settings: { GRANTD_GRAPH_MEMORY: '0' }, holdsNothing: true },
    ),
  );
  results.sql = { inMemory, fixedRate, mismatches };
  results.peers.check_sql_in_memory = {
    ...inMemory,
    note: "check_sql's load on a second grantd holding the tenant in memory, its runs alternating with check_sql's",
  };
  results.peers.check_sql_fixed_rate = { ...fixedRate, offered_per_s: SQL_FIXED_RATE };
  // A run sends the pool from its start: a check repeats only after a whole pass.
  const passS = (rps: number) => bodies.length / rps;
  const cacheHits = Math.min(passS(sql.rps), passS(SQL_FIXED_RATE)) > CACHED_ANSWER_S ? 'none' : 'some';
  ctx.record(
    'check_sql',
    sql,
    `the check mix's ${bodies.length.toLocaleString('en')} distinct checks on a grantd with GRANTD_GRAPH_MEMORY=0 (PostgreSQL answers every check), ${CLOSED_LOOP}; ` +
      `its runs alternate with the same load on a grantd holding the tenant (${fmt(inMemory.rps, 1)}/s, p50 ${fmt(inMemory.p50_ms)} ms, errors ${inMemory.errors}): rps / that ${fmt(ratio(sql.rps, inMemory.rps), 3)}; ` +
      `at an offered ${SQL_FIXED_RATE.toLocaleString('en')}/s (open loop as check_fixed_rate's, without its closed-loop warm-up): achieved ${fixedRate.rps.toFixed(0)}/s, p50 ${fmt(fixedRate.p50_ms)} p99 ${fmt(fixedRate.p99_ms)} ms, errors ${fixedRate.errors}; ` +
      `cache hits: ${cacheHits} (a check repeats only after a pass of the pool, ${passS(sql.rps).toFixed(1)} s at the saturated rate and ${passS(SQL_FIXED_RATE).toFixed(0)} s at ${SQL_FIXED_RATE}/s, against answers kept ${CACHED_ANSWER_S * 1000} ms); ` +
      `labelled mix answered by PostgreSQL against the model: ${mismatches} mismatches`,
  );
}

/** The grantd's answers to the labelled mix (one by one and in bulk) that differ from the reference model's, or were not given. */
async function modelMismatches(ctx: RunContext, api: Parameters<typeof grantdAnswers>[0]): Promise<number> {
  const { mix } = ctx.samples;
  const { single, bulk } = await grantdAnswers(api, mix);
  return mix.reduce((wrong, check, i) => wrong + Number(single[i] !== check.expected) + Number(bulk[i] !== check.expected), 0);
}
