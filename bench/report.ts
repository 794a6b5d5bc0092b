/** The report: the table, the targets and the notes to stdout; the results to the --out JSON file. */
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { RunContext } from './context.ts';
import { SCENARIOS, WINDOWS_SCENARIOS } from './options.ts';
import { fmt, type RunStats } from './scenarios.ts';
import { SQL_FIXED_RATE } from './scenarios/check-sql.ts';
import { windowsLoad } from './scenarios/windows.ts';
import { targetLines } from './targets.ts';

const reportedRows = ({ results: { rows } }: RunContext) => SCENARIOS.filter((n) => rows.has(n)).map((n) => rows.get(n)!);

export function report(ctx: RunContext): void {
  const { mismatches, notes } = ctx.results;
  const out = [...resultTable(ctx), '', 'targets:', ...targetLines(ctx)];
  if (mismatches.length > 0) out.push('first mismatches with SpiceDB:', ...mismatches.slice(0, 10).map((m) => `  ${m}`));
  if (notes.length > 0) out.push('notes:', ...notes.map((n) => `  - ${n}`));
  out.push(`wall time: ${((performance.now() - ctx.t0) / 1000).toFixed(0)} s`);
  process.stdout.write(`${out.join('\n')}\n`);
  writeResults(ctx);
}

/** A row per scenario run, then the peers. */
function resultTable(ctx: RunContext): string[] {
  const { args, size, plan, workers } = ctx.options;
  const {
    express,
    expressError,
    expressListen,
    expressBulk,
    batchWithoutFeed,
    noWindowsPeers,
    rulesPlainPeer,
    tracingOnCheck,
    sql,
    cerbos,
    cerbosError,
    spice,
    spiceError,
    compare,
  } = ctx.results;
  const scenarios = reportedRows(ctx);
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(20) : c.padStart(10))).join(' ');
  const out: string[] = [];
  out.push(
    '',
    `grantd benchmark, dataset ${size}${args.quick ? ' (--quick)' : ''}, ${plan.runs} runs of ${plan.durationS} s after ${plan.warmupS} s warm-up, medians`,
  );
  out.push(
    `grantd and bare Express with ${workers} worker process${workers === 1 ? '' : 'es'} each (--workers), on ${availableParallelism()} cores shared with the load generator`,
  );
  out.push(line(['scenario', 'rps', 'p50 ms', 'p95 ms', 'p99 ms', 'errors', 'vs_express', 'vs_cerbos']));
  for (const r of scenarios)
    out.push(
      line([
        r.name,
        r.rps === null ? '-' : fmt(r.rps, 1),
        fmt(r.p50_ms),
        fmt(r.p95_ms),
        fmt(r.p99_ms),
        r.rps === null ? '-' : String(r.errors),
        fmt(r.vs_express),
        fmt(r.vs_cerbos),
      ]),
    );
  const peerLine = (label: string, stats: RunStats) =>
    line([label, fmt(stats.rps, 1), fmt(stats.p50_ms), fmt(stats.p95_ms), fmt(stats.p99_ms), String(stats.errors), '', '']);
  out.push(express ? peerLine('(peer) express check', express) : `(peer) express: null (${expressError})`);
  if (expressListen) out.push(peerLine('(peer) app.listen check', expressListen));
  if (expressBulk) out.push(peerLine('(peer) express bulk', expressBulk));
  if (batchWithoutFeed) out.push(peerLine('(peer) batch write without the changes feed', batchWithoutFeed));
  for (const name of WINDOWS_SCENARIOS) {
    const peer = noWindowsPeers[name];
    if (peer) out.push(peerLine(`(peer) ${windowsLoad(name)} without windows`, peer));
  }
  if (rulesPlainPeer) out.push(peerLine('(peer) check alternating with check_rules', rulesPlainPeer));
  if (tracingOnCheck) out.push(peerLine('(peer) check with tracing on', tracingOnCheck));
  if (sql) out.push(peerLine('(peer) check_sql in memory', sql.inMemory), peerLine(`(peer) check_sql at ${SQL_FIXED_RATE}/s`, sql.fixedRate));
  for (const [name, stats] of Object.entries(compare?.runs ?? {})) out.push(peerLine(`(compared build) ${name}`, stats));
  out.push(cerbos ? peerLine('(peer) cerbos check', cerbos) : `(peer) cerbos: null (${cerbosError})`);
  out.push(
    spice
      ? `(peer) spicedb (embedded, in-memory, in-process FFI): ${spice.relationships} relationships loaded in ${spice.load_s.toFixed(1)} s, ${spice.rss_mb} MB; ${spice.single_checks_per_s.toFixed(1)} checks/s single, ${spice.bulk_checks_per_s.toFixed(1)} checks/s in bulks of 100; ${ctx.samples.listings.length} lookups in ${spice.listing_s.toFixed(1)} s`
      : `(peer) spicedb: null (${spiceError})`,
  );
  if (compare)
    out.push(
      `compared build: ${compare.root} (${compare.version}), its own database; its answers against the model: ${compare.mismatches} mismatches`,
    );
  for (const r of scenarios) if (r.note) out.push(`  ${r.name}: ${r.note}`);
  return out;
}

function writeResults(ctx: RunContext): void {
  const { args, size, seed, plan, workers } = ctx.options;
  const { grantdVersion, spiceMismatches, mismatches, peers, notes, compare } = ctx.results;
  const scenarios = reportedRows(ctx);
  const round = (x: number | null) => (x === null ? null : Math.round(x * 1000) / 1000);
  const json = {
    dataset: size,
    seed,
    grantd: grantdVersion,
    quick: args.quick,
    plan,
    workers,
    scenarios: scenarios.map((r) => ({
      name: r.name,
      rps: round(r.rps),
      p50_ms: round(r.p50_ms),
      p95_ms: round(r.p95_ms),
      p99_ms: round(r.p99_ms),
      ...(r.p999_ms !== undefined ? { p999_ms: round(r.p999_ms) } : {}),
      errors: r.errors,
      vs_express: round(r.vs_express),
      vs_cerbos: round(r.vs_cerbos),
      ...(r.statuses ? { statuses: r.statuses } : {}),
      ...(r.note ? { note: r.note } : {}),
    })),
    spicedb_mismatches: spiceMismatches,
    spicedb_mismatch_examples: mismatches.slice(0, 20),
    peers,
    ...(compare ? { compared_build: compare } : {}),
    notes,
    wall_s: Math.round((performance.now() - ctx.t0) / 1000),
  };
  writeFileSync(args.out, `${JSON.stringify(json, null, 2)}\n`);
  ctx.log(`wrote ${args.out}`);
}
