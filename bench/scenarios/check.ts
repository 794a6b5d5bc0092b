/** Scenario check, with its peers: the bare Express app (on grantd's server and on app.listen) and Cerbos. */
import { join } from 'node:path';
import { cerbosAllowed, cerbosPolicy, cerbosRequest } from '../cerbos.ts';
import { compareLoad, recordCompared, withCompareBuild } from '../compare-build.ts';
import type { RunContext } from '../context.ts';
import { pool } from '../load.ts';
import { measureAlternating } from '../scenarios.ts';
import { ensurePeer, startCerbos } from '../servers.ts';
import {
  CLOSED_LOOP,
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

/**
 * check: grantd and the bare Express app (on grantd's HTTP server) alternating run by run, both
 * started before the first warm-up, so that what the machine does meanwhile falls on both alike;
 * then Express on stock `app.listen` (reference only) and Cerbos. The ratios go in the row.
 */
export async function runCheck(ctx: RunContext, dataset: DatasetContext): Promise<void> {
  const { databaseUrl, key } = dataset;
  const { log, results } = ctx;
  results.cerbosError ??= ensurePeer('cerbos', log);
  log(
    `scenario check (grantd alternating with the bare express app${dataset.compare ? ' and the compared build' : ''}, then express on app.listen, then cerbos)`,
  );
  const [grantd, bare, compared] = await withGrantd(ctx, databaseUrl, key, (api) =>
    withCompareBuild(ctx, dataset, (other) =>
      withExpress(ctx, (ex) =>
        measureAlternating(
          [
            { label: 'check grantd', once: saturating(ctx, 'check grantd', api, headersFor(api), checkSpec(ctx)) },
            { label: 'check express', once: saturating(ctx, 'check express', ex, grantdHeaders(key), checkSpec(ctx)) },
            ...compareLoad('check', other, (o, label) => saturating(ctx, label, o, headersFor(o), checkSpec(ctx))),
          ],
          log,
          ctx.options.plan,
        ),
      ),
    ),
  );
  ctx.record('check', grantd!.median, `${CLOSED_LOOP}, the same for the bare Express app (its runs alternating with grantd's) and Cerbos`);
  recordCompared(ctx, 'check', compared);
  results.express = bare!.median;
  try {
    results.expressListen = (
      await withExpress(ctx, (ex) => saturate(ctx, 'check express (app.listen)', ex, grantdHeaders(key), checkSpec(ctx)), 'listen')
    ).median;
  } catch (error) {
    log(`check express (app.listen), a reference only, failed: ${firstLine(error, 4)}`);
  }
  if (!results.cerbosError) {
    try {
      await measureCerbos(ctx);
    } catch (error) {
      results.cerbosError = firstLine(error, 4);
    }
  }
  if (results.cerbosError) results.peers.cerbos = { error: results.cerbosError };
  const { express, expressListen, cerbos } = results;
  results.peers.express = express ? { check: express, check_on_app_listen: expressListen } : { error: results.expressError };
  const check = results.rows.get('check')!;
  check.vs_express = express && express.rps > 0 ? (check.rps ?? 0) / express.rps : null;
  check.vs_cerbos = cerbos && cerbos.rps > 0 ? (check.rps ?? 0) / cerbos.rps : null;
}

/** Cerbos on the same checks: its answers to the mix against the reference model, then its rate. */
async function measureCerbos(ctx: RunContext): Promise<void> {
  const { ds, log, results } = ctx;
  const { mix } = ctx.samples;
  const cb = await startCerbos(join(ctx.resources.workDir, 'cerbos'), { 'document.yaml': cerbosPolicy() });
  try {
    let wrong = 0;
    await pool(mix.keys(), 16, async (i) => {
      const res = await fetch(`${cb.url}/api/check/resources`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: cerbosRequest(ds, mix[i]!, i),
      });
      if (!res.ok) throw new Error(`cerbos answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
      if (cerbosAllowed(await res.json(), mix[i]!.relation) !== mix[i]!.expected) wrong++;
    });
    log(`cerbos vs reference model on the check mix: ${wrong} disagreements`);
    const cerbosBodies = ctx.bodies.loadChecks.map((c, i) => cerbosRequest(ds, c, i));
    results.cerbos = (
      await saturate(
        ctx,
        'check cerbos',
        cb,
        { 'content-type': 'application/json' },
        { ...checkSpec(ctx), paths: ['/api/check/resources'], bodies: cerbosBodies },
      )
    ).median;
    results.peers.cerbos = { check: results.cerbos, model_mismatches: wrong };
  } finally {
    await cb.proc.stop();
  }
}
