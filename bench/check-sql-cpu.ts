/**
 * What a check answered by PostgreSQL costs, on both sides (issue 45's check_sql): a grantd started
 * with GRANTD_GRAPH_MEMORY=0 over dataset S, driven by bench/open-loop.ts's closed loop with the
 * check mix's distinct checks (as check_sql's load); each run reports rps, the grantd's CPU (utime +
 * stime of its processes, from /proc) per answered check, and that of the database's backends
 * serving it (the PostgreSQL processes connected to its database). CPU per check rather than rps,
 * since the machine is shared.
 *
 * Run: `node --import tsx bench/check-sql-cpu.ts [--rounds 3] [--seconds 8] [--workers 1]
 * [--connections 64] [--database-url URL] [--keep] [--compare-root DIR]`. With --database-url (a
 * database this script or bench/check-cpu.ts loaded and kept with --keep) the load is skipped;
 * --compare-root runs a grantd built in another checkout (the code before a change) in every round,
 * the two builds' runs alternating in order, so that they are measured side by side.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { checkMix, Dataset } from './dataset.ts';
import { Api, loadGrantd } from './load.ts';
import { openLoopInChild } from './open-loop.ts';
import {
  children,
  createDatabase,
  dropDatabase,
  ensureBuilt,
  killHard,
  ROOT,
  SCRATCH,
  startGrantd,
  treeCpuSeconds,
  vacuumDatabase,
  type Server,
} from './servers.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '8' },
    workers: { type: 'string', default: '1' },
    connections: { type: 'string', default: '64' },
    'database-url': { type: 'string' },
    keep: { type: 'boolean', default: false },
    root: { type: 'string', default: ROOT },
    'compare-root': { type: 'string' },
  },
});
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const TICKS_PER_S = 100;

/** CPU ticks of each PostgreSQL backend connected to `database` (its title names it), by pid. */
function backendTicks(database: string): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!title.startsWith('postgres: ') || !title.includes(` ${database} `)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks.set(Number(entry), Number(fields[11]) + Number(fields[12]));
    } catch {
      // ended meanwhile
    }
  }
  return ticks;
}

/** CPU seconds the backends took since `before` (a backend started since counts from 0; one ended since is lost). */
function backendCpuSince(database: string, before: Map<number, number>): number {
  let ticks = 0;
  for (const [pid, now] of backendTicks(database)) ticks += now - (before.get(pid) ?? 0);
  return ticks / TICKS_PER_S;
}

interface Measured {
  rps: number;
  nodeUs: number;
  pgUs: number;
  p50Ms: number | null;
  errors: number;
}

async function drive(server: Server, database: string, headers: Record<string, string>, bodiesFile: string): Promise<Measured> {
  const pid = server.proc.child.pid!;
  const nodeBefore = treeCpuSeconds(pid);
  const pgBefore = backendTicks(database);
  const stats = await openLoopInChild({
    url: server.url,
    path: '/v1/check',
    headers,
    bodiesFile,
    connections: Number(values.connections),
    durationS: Number(values.seconds),
  });
  const answered = stats.rps * stats.seconds;
  return {
    rps: stats.rps,
    nodeUs: ((treeCpuSeconds(pid) - nodeBefore) * 1e6) / answered,
    pgUs: (backendCpuSince(database, pgBefore) * 1e6) / answered,
    p50Ms: stats.p50_ms,
    errors: stats.errors,
  };
}

async function main(): Promise<void> {
  const note = ensureBuilt(log);
  if (note) log(note);
  const workDir = mkdtempSync(join(tmpdir(), 'grantd-check-sql-cpu-'));
  const ds = new Dataset('S', 1);
  const bodiesFile = join(workDir, 'check-bodies.json');
  // check_sql's load: the mix's distinct checks, so that grantd's cache of answers (500 ms) is not what is measured.
  const bodies = checkMix(ds, 100_000, 3).map(({ subject, relation, object }) => JSON.stringify({ subject, relation, object }));
  writeFileSync(bodiesFile, JSON.stringify([...new Set(bodies)]));

  let databaseUrl = values['database-url'];
  let created: string | null = null;
  if (!databaseUrl) {
    const database = await createDatabase();
    created = database.name;
    databaseUrl = database.url;
  }
  const database = new URL(databaseUrl).pathname.slice(1);
  const keyFile = join(SCRATCH, 'check-sql-cpu-key');
  const sqlOnly = { GRANTD_GRAPH_MEMORY: '0' };
  const workers = Number(values.workers);
  const servers: Server[] = [];
  try {
    const grantd = await startGrantd(values.root, databaseUrl, workers, sqlOnly);
    servers.push(grantd);
    const key = grantd.adminKey ?? readFileSync(keyFile, 'utf8').trim();
    const api = new Api(grantd.url, key);
    if (created) {
      log(`loading dataset S into ${created}`);
      const loaded = await loadGrantd(api, ds, log);
      log(`loaded ${loaded.grants} grants in ${loaded.seconds.toFixed(0)} s`);
      log(`VACUUM ANALYZE (autovacuum ${await vacuumDatabase(databaseUrl)})`);
      mkdirSync(SCRATCH, { recursive: true });
      writeFileSync(keyFile, key);
      if (values.keep) log(`kept: --database-url ${databaseUrl}`);
    }
    const headers = api.headers();
    const builds: { label: string; server: Server }[] = [{ label: 'grantd', server: grantd }];
    if (values['compare-root']) {
      const compare = await startGrantd(values['compare-root'], databaseUrl, workers, sqlOnly);
      servers.push(compare);
      builds.push({ label: 'compare', server: compare });
    }
    // Warm-up: the JIT, the connections and their plans.
    for (const { server } of builds) await drive(server, database, headers, bodiesFile);
    const rows: { label: string; m: Measured }[] = [];
    for (let round = 0; round < Number(values.rounds); round++) {
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      // Neither build always runs first.
      for (const { label, server } of round % 2 === 0 ? builds : [...builds].reverse()) {
        const m = await drive(server, database, headers, bodiesFile);
        rows.push({ label, m });
        log(
          `round ${round + 1} (load ${load}) ${label.padEnd(8)} ${m.rps.toFixed(0).padStart(6)} rps  node ${m.nodeUs.toFixed(0).padStart(5)} us/check  ` +
            `PostgreSQL ${m.pgUs.toFixed(0).padStart(5)} us/check  p50 ${m.p50Ms?.toFixed(2)} ms  errors ${m.errors}`,
        );
      }
    }
    const summary: Record<string, { rps: number[]; node_us: number[]; pg_us: number[] }> = {};
    for (const { label, m } of rows) {
      summary[label] ??= { rps: [], node_us: [], pg_us: [] };
      summary[label].rps.push(Math.round(m.rps));
      summary[label].node_us.push(Math.round(m.nodeUs));
      summary[label].pg_us.push(Math.round(m.pgUs));
    }
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    for (const server of servers) await server.proc.stop();
    for (const child of children) killHard(child);
    if (created && !values.keep) await dropDatabase(created);
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
