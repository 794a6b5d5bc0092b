/** Scenario check_bulk_100 and its bare Express peer; the note on how soon the check and bulk load pools repeat. */
import { compareLoad, recordCompared, withCompareBuild } from '../compare-build.ts';
import type { RunContext } from '../context.ts';
import { fmt, measureAlternating } from '../scenarios.ts';
import {
  CLOSED_LOOP,
  bulkSpec,
  checkSpec,
  firstLine,
  grantdHeaders,
  headersFor,
  saturate,
  saturating,
  withExpress,
  withGrantd,
  type DatasetContext,
} from './shared.ts';

export async function runCheckBulk(ctx: RunContext, dataset: DatasetContext): Promise<void> {
  const { databaseUrl, key } = dataset;
  const { results } = ctx;
  ctx.log(`scenario check_bulk_100 (grantd${dataset.compare ? ' alternating with the compared build' : ''}, then express)`);
  // The single check alternates with the bulk on the same grantd, so that their ratio (the target) is
  // of runs side by side: measured minutes apart, it carried the machine's drift between them.
  const [bulk, single, compared] = await withGrantd(ctx, databaseUrl, key, (api) =>
    withCompareBuild(ctx, dataset, (other) =>
      measureAlternating(
        [
          { label: 'check_bulk_100', once: saturating(ctx, 'check_bulk_100', api, headersFor(api), bulkSpec(ctx)) },
          {
            label: 'check grantd, alternating with check_bulk_100',
            once: saturating(ctx, 'check_bulk_100 single', api, headersFor(api), checkSpec(ctx)),
          },
          ...compareLoad('check_bulk_100', other, (o, label) => saturating(ctx, label, o, headersFor(o), bulkSpec(ctx))),
        ],
        ctx.log,
        ctx.options.plan,
      ),
    ),
  );
  results.peers.check_with_bulk = {
    ...single!.median,
    note: `the single check's mix and load, alternating with check_bulk_100 on the same grantd: the bulk targets' single check`,
  };
  ctx.record(
    'check_bulk_100',
    bulk!.median,
    `rps = bulk requests/s of 100 checks each; ${CLOSED_LOOP}, the same for the bare Express app; the single check alternating with it: ${fmt(single!.median.rps, 1)}/s, p50 ${fmt(single!.median.p50_ms)} ms`,
  );
  recordCompared(ctx, 'check_bulk_100', compared);
  try {
    const expressBulk = (await withExpress(ctx, (ex) => saturate(ctx, 'check_bulk_100 express', ex, grantdHeaders(key), bulkSpec(ctx)))).median;
    results.expressBulk = expressBulk;
    results.peers.express_bulk = expressBulk;
    const bulk = results.rows.get('check_bulk_100')!;
    bulk.vs_express = expressBulk.rps > 0 ? (bulk.rps ?? 0) / expressBulk.rps : null;
  } catch (error) {
    ctx.log(`express bulk: ${firstLine(error)}`);
  }
}

/** How soon a check or a bulk of the load pools comes back, against the time grantd caches answers. */
export function noteLoadPools({ bodies: { checkBodies, bulkBodies }, results: { rows }, note }: RunContext): void {
  const repeat = (poolSize: number, rps: number | null | undefined) => (rps ? `${(poolSize / rps).toFixed(1)} s` : '-');
  note(
    `load pools: ${checkBodies.length} checks (check, check_fixed_rate, express, cerbos; ${new Set(checkBodies).size} distinct, so some come back within the pool) and ${bulkBodies.length} bulks of 100; ` +
      `at the measured rates the check pool comes back after ${repeat(checkBodies.length, rows.get('check')?.rps)} (check) and a bulk after ${repeat(bulkBodies.length, rows.get('check_bulk_100')?.rps)}, against the 500 ms for which grantd caches the answers PostgreSQL gives`,
  );
}
