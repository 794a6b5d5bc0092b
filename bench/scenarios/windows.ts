/** Scenarios check_windows and check_bulk_windows (issue 22): time-bound grants against none. */
import type { RunContext } from '../context.ts';
import { Api } from '../load.ts';
import type { WindowsScenario } from '../options.ts';
import { fmt, measureAlternating, pairedRatios } from '../scenarios.ts';
import { NO_WINDOWS_TENANT, windowedGrants } from '../time-bound.ts';
import { CLOSED_LOOP, bulkSpec, checkSpec, headersFor, ratio, saturating, withGrantd, type DatasetContext } from './shared.ts';

/** What the report calls each windows scenario's load. */
export const windowsLoad = (name: WindowsScenario) => (name === 'check_windows' ? 'check' : 'bulk');

/**
 * check_windows and check_bulk_windows (issue 22): the check's or the bulk's load on the dataset's
 * tenant (every WINDOWED_EVERY-th direct viewer grant with a far-future window), alternating run by
 * run with the same load on tenant NO_WINDOWS_TENANT (the same grants, no window anywhere: what the
 * load cost before time-bound grants), one fresh grantd holding both.
 */
export async function runWindows(ctx: RunContext, name: WindowsScenario, { databaseUrl, key }: DatasetContext): Promise<void> {
  const { results } = ctx;
  const peer = results.noWindows!;
  const spec = name === 'check_windows' ? checkSpec(ctx) : bulkSpec(ctx);
  ctx.log(`scenario ${name} (alternating with the same load on tenant ${NO_WINDOWS_TENANT}, same grantd)`);
  const [windowed, plain] = await withGrantd(
    ctx,
    databaseUrl,
    key,
    (api) =>
      measureAlternating(
        [
          { label: `${name} grantd`, once: saturating(ctx, `${name} grantd`, api, headersFor(api), spec) },
          {
            label: `${name} grantd, tenant without windows`,
            once: saturating(ctx, `${name} no windows`, api, new Api(api.url, peer.key).headers(), spec),
          },
        ],
        ctx.log,
        ctx.options.plan,
      ),
    { alsoHeld: [peer.key] },
  );
  results.noWindowsPeers[name] = plain!.median;
  const paired = pairedRatios(windowed!.runs, plain!.runs);
  const load = name === 'check_windows' ? `the check's mix and load` : `check_bulk_100's bulks and load (rps = bulk requests/s)`;
  results.peers[`${name === 'check_windows' ? 'check' : 'check_bulk'}_without_windows`] = {
    ...plain!.median,
    note: `${load} on tenant ${NO_WINDOWS_TENANT} (the dataset's grants, no window), alternating with ${name} on the same grantd`,
  };
  ctx.record(
    name,
    windowed!.median,
    `${load} (${CLOSED_LOOP}) on the dataset's tenant (${windowedGrants(ctx.ds)} grants with a far-future window); its runs alternate with the same load on tenant ` +
      `${NO_WINDOWS_TENANT}, the same grants without windows, on the same grantd: rps / without windows ${fmt(ratio(windowed!.median.rps, plain!.median.rps), 3)}` +
      ` (run by run, each pair adjacent in time: ${paired.ratios.map((r) => fmt(r, 3)).join(', ')}; median ${fmt(paired.median, 3)})` +
      `${peer.differing > 0 ? `; ${peer.differing} answers of the mix differ between the tenants` : ''}`,
  );
}
