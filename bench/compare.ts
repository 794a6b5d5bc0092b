/** Correctness: grantd's answers against the reference model and against SpiceDB (run beside the load). */
import { join } from 'node:path';
import type { RunContext } from './context.ts';
import type { Triple } from './dataset.ts';
import type { GrantdAnswers } from './load-dataset.ts';
import { ensurePeer } from './servers.ts';
import { runSpiceDB, type SpiceResult } from './spicedb.ts';

/**
 * SpiceDB works on its own copy of the dataset in a child process; it overlaps the grantd load (not a
 * reported figure) and must end before any measured scenario starts (compareWithSpiceDB waits).
 */
export function startSpiceDB(ctx: RunContext): Promise<SpiceResult | null> {
  const { log, results } = ctx;
  const { args, size, seed } = ctx.options;
  const { spiceChecks, listings } = ctx.samples;
  results.spiceError ??= ensurePeer('spicedb', log);
  if (results.spiceError) return Promise.resolve(null);
  const procs = Number(args['spicedb-procs'] ?? (size === 'S' ? 2 : 1));
  log(`SpiceDB: loading the dataset and answering ${spiceChecks.length} checks and ${listings.length} listings (${procs} child processes)`);
  const out = join(ctx.resources.workDir, 'spicedb.json');
  return runSpiceDB({ size, seed, checks: spiceChecks, listings, out }, procs, (size === 'S' ? 15 : 240) * 60_000).catch((error: unknown) => {
    results.spiceError = error instanceof Error ? error.message : String(error);
    return null;
  });
}

/** Correctness: grantd vs the reference model (all checks, agents included), single vs bulk. */
export function compareWithModel(ctx: RunContext, answers: GrantdAnswers): void {
  ctx.results.peers.model = modelMismatches(ctx, 'grantd', answers);
}

/** How many of a grantd's answers (`label` in the log) disagree with the reference model, and single with bulk; logged. */
export function modelMismatches({ ds, log, samples: { mix, listings } }: RunContext, label: string, answers: GrantdAnswers) {
  type Answers = (boolean | null)[];
  const disagree = (what: string, checks: Triple[], a: Answers, b: Answers | ((i: number) => boolean)) => {
    let n = 0;
    checks.forEach((c, i) => {
      const other = typeof b === 'function' ? b(i) : b[i];
      if (a[i] !== other) {
        n++;
        if (n <= 5) log(`  ${what}: ${c.subject} ${c.relation} ${c.object}: ${label} ${a[i]}, other ${other}`);
      }
    });
    return n;
  };
  const checkMismatches = disagree(`${label} vs model`, mix, answers.mix.single, (i) => mix[i]!.expected);
  const bulkMismatches = disagree('check vs check/bulk', mix, answers.mix.single, answers.mix.bulk);
  let listingMismatches = 0;
  listings.forEach((l, i) => {
    if (JSON.stringify(ds.expectList(l.subject, l.relation)) !== JSON.stringify(answers.listings[i])) listingMismatches++;
  });
  log(`${label} vs reference model: ${checkMismatches} check and ${listingMismatches} listing disagreements; single vs bulk: ${bulkMismatches}`);
  return { check_mismatches: checkMismatches, listing_mismatches: listingMismatches, check_vs_bulk_mismatches: bulkMismatches };
}

/** Waits for SpiceDB's run, then compares its answers with grantd's (checks without agents, listings). */
export async function compareWithSpiceDB(
  { log, results, samples: { spiceChecks, listings } }: RunContext,
  spiceRun: Promise<SpiceResult | null>,
  answers: GrantdAnswers,
): Promise<void> {
  if (!results.spiceError) log('waiting for SpiceDB to finish before measuring');
  results.spice = await spiceRun;
  if (!results.spice) {
    results.peers.spicedb = { error: results.spiceError };
    return;
  }
  const result = results.spice;
  const { mismatches } = results;
  let n = 0;
  spiceChecks.forEach((c, i) => {
    if (answers.spice.single[i] !== result.checks[i]) {
      n++;
      mismatches.push(`check ${c.subject} ${c.relation} ${c.object} (${c.kind}): grantd ${answers.spice.single[i]}, spicedb ${result.checks[i]}`);
    }
  });
  listings.forEach((l, i) => {
    const [g, s] = [answers.listings[i] ?? [], result.listings[i]!];
    if (JSON.stringify(g) !== JSON.stringify(s)) {
      n++;
      const [inG, inS] = [new Set(g), new Set(s)];
      const onlyG = g.filter((id) => !inS.has(id)).slice(0, 3);
      const onlyS = s.filter((id) => !inG.has(id)).slice(0, 3);
      mismatches.push(
        `listing ${l.subject} ${l.relation}: grantd ${answers.listings[i] ? `${g.length} objects` : 'failed'}, spicedb ${s.length} (only grantd: ${onlyG.join(', ')}; only spicedb: ${onlyS.join(', ')})`,
      );
    }
  });
  results.spiceMismatches = n;
  results.peers.spicedb = {
    relationships: result.relationships,
    load_s: result.load_s,
    rss_mb: result.rss_mb,
    sample_checks: spiceChecks.length,
    sample_listings: listings.length,
    single_checks_per_s: result.single_checks_per_s,
    bulk_checks_per_s: result.bulk_checks_per_s,
    listing_s: result.listing_s,
  };
}
