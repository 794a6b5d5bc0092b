/**
 * What a bulk of 100 checks costs the server against a single check (issue 22's "a bulk of 100
 * costs less than five single checks"): one grantd worker (GRANTD_WORKERS=1) over dataset S,
 * loaded once through the API into a database of its own, then for each round a fresh grantd
 * holding the tenant in memory, loaded by the closed loop of bench/open-loop.ts with the single
 * check bodies and the check_bulk_100 bodies, one after the other (interleaved, so that a noisy
 * minute of the shared machine hits both). The server's CPU (utime + stime of grantd's process
 * group, from /proc) over each run, divided by the requests answered, is the figure: the rates
 * depend on what else the machine does, the CPU a request much less.
 *
 *   node --import tsx bench/bulk-cpu.ts [--rounds 3] [--seconds 8] [--connections 64]
 *       [--database <url> --key <admin key>]   # reuse a database a previous run loaded (--keep)
 *       [--keep]                               # do not drop the database at the end; prints its url and key
 *       [--root <dir>]                         # run the grantd built there (dist/, bin/; default: this checkout, built when stale)
 *       [--grantd-node-args '<flags>']         # node flags of the measured grantd, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof'
 *
 * Bodies are those of the benchmark run (bench/samples.ts loadBodies: checkMix of dataset S, seed
 * 42: seed + 2 for single checks, seed + 3 for the bulks of 100), so the figures are the check and
 * check_bulk_100 scenarios'.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { checkMix, Dataset } from './dataset.ts';
import { Api, holdInMemory, loadGrantd } from './load.ts';
import { openLoopInChild } from './open-loop.ts';
import { fmt } from './scenarios.ts';
import { createDatabase, dropDatabase, ensureBuilt, killHard, ROOT, startGrantd, vacuumDatabase, children } from './servers.ts';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '64' },
    database: { type: 'string' },
    key: { type: 'string' },
    keep: { type: 'boolean', default: false },
    root: { type: 'string' },
    'grantd-node-args': { type: 'string', default: '' },
  },
});
const SEED = 42;
const root = args.root ?? ROOT;
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

/** CPU seconds (user + system) of every process in the group `pgid`: grantd's primary and its worker. */
function groupCpuSeconds(pgid: number): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    // Fields after the command (which may hold spaces), from field 3 (state) on.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / 100; // USER_HZ
}

const ds = new Dataset('S', SEED);
const checkBodies = checkMix(ds, 100_000, SEED + 2).map(({ subject, relation, object }) => JSON.stringify({ subject, relation, object }));
const bulkChecks = checkMix(ds, 200_000, SEED + 3);
const bulkBodies: string[] = [];
for (let start = 0; start < bulkChecks.length; start += 100) {
  bulkBodies.push(
    JSON.stringify({ checks: bulkChecks.slice(start, start + 100).map(({ subject, relation, object }) => ({ subject, relation, object })) }),
  );
}
const workDir = mkdtempSync(join(tmpdir(), 'grantd-bulk-cpu-'));
const files = { check: join(workDir, 'check.json'), bulk: join(workDir, 'bulk.json') };
writeFileSync(files.check, JSON.stringify(checkBodies));
writeFileSync(files.bulk, JSON.stringify(bulkBodies));
const heldPerProcess = [...ds.triples()].length + ds.sizes.agents;

let createdDatabase: string | null = null;
async function cleanup(): Promise<void> {
  for (const child of children) killHard(child);
  rmSync(workDir, { recursive: true, force: true });
  if (createdDatabase && !args.keep) await dropDatabase(createdDatabase);
}
process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));

/** A database loaded with dataset S, and its admin key. */
async function loadedDatabase(): Promise<{ url: string; key: string }> {
  if (args.database && args.key) return { url: args.database, key: args.key };
  const database = await createDatabase();
  createdDatabase = database.name;
  const first = await startGrantd(root, database.url, 1);
  if (!first.adminKey) throw new Error(`grantd printed no admin key:\n${first.proc.output()}`);
  try {
    log(`loading dataset S into ${database.name}`);
    const loaded = await loadGrantd(new Api(first.url, first.adminKey), ds, log);
    log(`loaded ${loaded.grants} grants in ${loaded.seconds.toFixed(0)} s`);
  } finally {
    await first.proc.stop();
  }
  await vacuumDatabase(database.url);
  if (args.keep) log(`kept: --database ${database.url} --key ${first.adminKey}`);
  return { url: database.url, key: first.adminKey };
}

interface Measured {
  rps: number;
  p50: number | null;
  cpuUs: number;
}

async function measure(url: string, key: string, pgid: number, kind: 'check' | 'bulk'): Promise<Measured> {
  const before = groupCpuSeconds(pgid);
  const stats = await openLoopInChild({
    url,
    path: kind === 'check' ? '/v1/check' : '/v1/check/bulk',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    bodiesFile: files[kind],
    connections: Number(args.connections),
    durationS: Number(args.seconds),
  });
  const cpu = groupCpuSeconds(pgid) - before;
  if (stats.errors > 0) log(`${kind}: ${stats.errors} errors ${JSON.stringify(stats.statuses)}`);
  return { rps: stats.rps, p50: stats.p50_ms, cpuUs: (cpu * 1e6) / (stats.rps * stats.seconds) };
}

async function main(): Promise<void> {
  if (!args.root) {
    const built = ensureBuilt(log);
    if (built) log(built);
  }
  const { url, key } = await loadedDatabase();
  for (let round = 1; round <= Number(args.rounds); round++) {
    const server = await startGrantd(root, url, 1, {}, args['grantd-node-args'].split(' ').filter(Boolean));
    try {
      const api = new Api(server.url, key);
      if ((await holdInMemory([{ api, check: bulkChecks[0]! }], 1, heldPerProcess)) === null) log('tenant not held in memory within 300 s');
      const pgid = server.proc.child.pid!;
      // A warm-up of each, discarded, then each measured; the order alternates between rounds.
      await measure(server.url, key, pgid, 'check');
      await measure(server.url, key, pgid, 'bulk');
      const order: ('check' | 'bulk')[] = round % 2 ? ['check', 'bulk'] : ['bulk', 'check'];
      const result: Partial<Record<'check' | 'bulk', Measured>> = {};
      for (const kind of order) result[kind] = await measure(server.url, key, pgid, kind);
      const { check, bulk } = result as Record<'check' | 'bulk', Measured>;
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      console.log(
        `round ${round} (load ${load}): check ${Math.round(check.rps)}/s p50 ${fmt(check.p50)} ms, ${check.cpuUs.toFixed(0)} us CPU a check; ` +
          `bulk of 100 ${Math.round(bulk.rps)}/s p50 ${fmt(bulk.p50)} ms, ${bulk.cpuUs.toFixed(0)} us CPU a bulk; ` +
          `CPU bulk / check ${(bulk.cpuUs / check.cpuUs).toFixed(2)}, rps check / bulk ${(check.rps / bulk.rps).toFixed(2)}`,
      );
    } finally {
      await server.proc.stop();
    }
  }
}

await main().finally(cleanup);
