/**
 * grantd benchmark: `npm run bench -- [--quick] [--dataset S|L] [--out file] [--seed n]
 * [--no-spicedb] [--no-cerbos] [--spicedb-procs n] [--workers n|auto] [--only scenario,...] [--compare-root dir]`. See bench/README.md. Progress goes to stderr,
 * the table to stdout, the results to the --out JSON file (default bench-results.json).
 */
import { loadCompareBuild } from './compare-build.ts';
import { compareWithModel, compareWithSpiceDB, startSpiceDB } from './compare.ts';
import { createContext, type RunContext } from './context.ts';
import { loadDataset } from './load-dataset.ts';
import { COMPARED_SCENARIOS, parseOptions, WINDOWS_SCENARIOS } from './options.ts';
import { report } from './report.ts';
import { buildAndSnapshot, cleanup, cleanUpOnSignals, createBenchDatabase } from './resources.ts';
import { runCheckBulk, noteLoadPools } from './scenarios/check-bulk.ts';
import { runCheckFixedRate } from './scenarios/check-fixed-rate.ts';
import { runCheckRules } from './scenarios/check-rules.ts';
import { runCheckSql } from './scenarios/check-sql.ts';
import { runCheckAtLeast, runCheckToken } from './scenarios/check-variants.ts';
import { runCheck } from './scenarios/check.ts';
import { runGrantBatchWrite } from './scenarios/grant-batch-write.ts';
import { runObjectsDeepPage, runObjectsFirstPage, runObjectsWalk, runSubjectsFirstPage } from './scenarios/listings.ts';
import { runManyTenants } from './scenarios/many-tenants.ts';
import { runNoisyNeighbour } from './scenarios/noisy-neighbour.ts';
import { noteGraphLoads, type DatasetContext } from './scenarios/shared.ts';
import { runCheckTracingOff } from './scenarios/tracing-off.ts';
import { runWindows } from './scenarios/windows.ts';

/** The run: grantd built and snapshotted, a database, then the selected scenarios and the load and comparisons they need. */
async function main(ctx: RunContext): Promise<void> {
  buildAndSnapshot(ctx);
  const databaseUrl = await createBenchDatabase(ctx);
  if (ctx.options.needsDataset) {
    const spiceRun = startSpiceDB(ctx);
    const loaded = await loadDataset(ctx, databaseUrl);
    compareWithModel(ctx, loaded.answers);
    const { compareRoot, selected } = ctx.options;
    const compare = compareRoot && COMPARED_SCENARIOS.some((name) => selected.has(name)) ? await loadCompareBuild(ctx, compareRoot) : null;
    await compareWithSpiceDB(ctx, spiceRun, loaded.answers);
    await runDatasetScenarios(ctx, { databaseUrl, key: loaded.key, deepCursors: loaded.deepCursors, compare });
  }
  if (ctx.options.selected.has('noisy_neighbour')) await runNoisyNeighbour(ctx, databaseUrl);
  if (ctx.options.selected.has('many_tenants')) await runManyTenants(ctx, databaseUrl);
}

/** The scenarios over the loaded dataset, those selected, each on a fresh grantd. */
async function runDatasetScenarios(ctx: RunContext, dataset: DatasetContext): Promise<void> {
  const { selected } = ctx.options;
  if (selected.has('check')) await runCheck(ctx, dataset);
  if (selected.has('check_at_least')) await runCheckAtLeast(ctx, dataset);
  if (selected.has('check_token')) await runCheckToken(ctx, dataset);
  if (selected.has('check_fixed_rate')) await runCheckFixedRate(ctx, dataset);
  if (selected.has('check_sql')) await runCheckSql(ctx, dataset);
  if (selected.has('check_bulk_100')) await runCheckBulk(ctx, dataset);
  for (const name of WINDOWS_SCENARIOS) if (selected.has(name)) await runWindows(ctx, name, dataset);
  if (selected.has('check_rules')) await runCheckRules(ctx, dataset);
  if (selected.has('check_tracing_off')) await runCheckTracingOff(ctx, dataset);
  if (selected.has('check') || selected.has('check_bulk_100')) noteLoadPools(ctx);
  if (selected.has('objects_first_page')) await runObjectsFirstPage(ctx, dataset);
  if (selected.has('subjects_first_page')) await runSubjectsFirstPage(ctx, dataset);
  if (selected.has('objects_walk')) await runObjectsWalk(ctx, dataset);
  if (selected.has('objects_page_1m')) await runObjectsDeepPage(ctx, dataset);
  if (selected.has('grant_batch_write')) await runGrantBatchWrite(ctx, dataset);
  if (ctx.graphLoads.length > 0) noteGraphLoads(ctx);
}

const ctx = createContext(parseOptions());
cleanUpOnSignals(ctx);
let failed = false;
try {
  await main(ctx);
} catch (error) {
  failed = true;
  ctx.log(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  ctx.results.notes.push(`run failed: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
} finally {
  await cleanup(ctx);
}
report(ctx);
process.exit(failed ? 1 : 0);
