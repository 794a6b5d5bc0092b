/**
 * What one POST /v1/check costs its server's CPU, against the bare Express app's (bench/README.md,
 * "What a check costs the server"). One grantd process (GRANTD_WORKERS=1) over dataset S and one
 * bare Express process (bench/express-baseline.ts), each driven in turn by bench/open-loop.ts's
 * closed loop, rounds interleaved; each run reports rps and the server's CPU time (utime + stime of
 * its processes, from /proc) per answered request. A check by API key and one by OAuth access token.
 *
 * Run: `node --import tsx bench/check-cpu.ts [--rounds 3] [--seconds 8] [--size S]
 * [--database-url URL] [--grantd-node-args='--cpu-prof --max-semi-space-size=16']`. With --database-url
 * (a database this script loaded and kept with --keep) the load is skipped; --root runs the grantd
 * built in another checkout (the code before a change, say); --compare-root runs one more grantd,
 * built in another checkout, in every round (row `compare key`), so that a change and the code
 * before it are measured side by side.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { checkMix, Dataset, type SizeName } from './dataset.ts';
import { Api, clientCredentialsToken, holdInMemory, loadGrantd } from './load.ts';
import { openLoopInChild } from './open-loop.ts';
import {
  children,
  createDatabase,
  dropDatabase,
  ensureBuilt,
  killHard,
  ROOT,
  SCRATCH,
  startExpress,
  startGrantd,
  treeCpuSeconds,
  type Server,
} from './servers.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '8' },
    size: { type: 'string', default: 'S' },
    'database-url': { type: 'string' },
    keep: { type: 'boolean', default: false },
    root: { type: 'string', default: ROOT },
    'compare-root': { type: 'string' },
    'grantd-node-args': { type: 'string', default: '' },
  },
});
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

interface Measured {
  rps: number;
  cpuUsPerRequest: number;
  p99Ms: number | null;
  errors: number;
}

async function drive(server: Server, headers: Record<string, string>, bodiesFile: string): Promise<Measured> {
  const pid = server.proc.child.pid!;
  const cpuBefore = treeCpuSeconds(pid);
  const stats = await openLoopInChild({ url: server.url, path: '/v1/check', headers, bodiesFile, connections: 64, durationS: seconds });
  const cpu = treeCpuSeconds(pid) - cpuBefore;
  const answered = stats.rps * stats.seconds;
  return { rps: stats.rps, cpuUsPerRequest: (cpu * 1e6) / answered, p99Ms: stats.p99_ms, errors: stats.errors };
}

async function main(): Promise<void> {
  const note = values.root === ROOT ? ensureBuilt(log) : null;
  if (note) log(note);
  const workDir = mkdtempSync(join(tmpdir(), 'grantd-check-cpu-'));
  const ds = new Dataset(values.size as SizeName, 1);
  const bodiesFile = join(workDir, 'check-bodies.json');
  // As the run's load pool (bench/samples.ts loadBodies): many distinct checks, so that grantd's
  // cache of answers is not what is measured.
  writeFileSync(
    bodiesFile,
    JSON.stringify(checkMix(ds, 100_000, 3).map(({ subject, relation, object }) => JSON.stringify({ subject, relation, object }))),
  );

  let databaseUrl = values['database-url'];
  let created: string | null = null;
  if (!databaseUrl) {
    const database = await createDatabase();
    created = database.name;
    databaseUrl = database.url;
  }
  const keyFile = join(SCRATCH, 'check-cpu-key');
  const nodeArgs = values['grantd-node-args'].split(' ').filter(Boolean);
  try {
    const grantd = await startGrantd(values.root, databaseUrl, 1, {}, nodeArgs);
    // grantd prints the admin key it bootstraps in a new database; a kept database's is in the scratch folder.
    const key = grantd.adminKey ?? readFileSync(keyFile, 'utf8').trim();
    const api = new Api(grantd.url, key);
    if (created) {
      log(`loading dataset ${values.size} into ${created}`);
      const loaded = await loadGrantd(api, ds, log);
      log(`loaded ${loaded.grants} grants in ${loaded.seconds.toFixed(0)} s`);
      mkdirSync(SCRATCH, { recursive: true });
      writeFileSync(keyFile, key);
      if (values.keep) log(`kept: --database-url ${databaseUrl}`);
    }
    const heldPerProcess = [...ds.triples()].length + ds.sizes.agents;
    const [first] = checkMix(ds, 100, 2);
    await holdInMemory([{ api, check: first! }], 1, heldPerProcess);
    const token = await clientCredentialsToken(api, ['check:read']);
    const byKey = api.headers();
    const byToken = new Api(grantd.url, token).headers();
    // Warm-up: the JIT and the held tenant, both credentials.
    await drive(grantd, byKey, bodiesFile);
    await drive(grantd, byToken, bodiesFile);
    const compare = values['compare-root'] ? await startGrantd(values['compare-root'], databaseUrl, 1, {}, nodeArgs) : null;
    if (compare) {
      const compareApi = new Api(compare.url, key);
      await holdInMemory([{ api: compareApi, check: first! }], 1, heldPerProcess);
      // The same history as the first grantd's (a write, a token issued), which may leave costs behind.
      await clientCredentialsToken(compareApi, ['check:read']);
      await drive(compare, byKey, bodiesFile);
    }
    const rows: { label: string; m: Measured }[] = [];
    const express = await startExpress(1);
    try {
      await drive(express, byKey, bodiesFile);
      for (let round = 0; round < rounds; round++) {
        const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
        const grantdRuns = [
          ['grantd key', grantd, byKey],
          ['grantd token', grantd, byToken],
        ] as const;
        // The other build before this one's runs every other round: neither always follows the bare app.
        const compareRuns = compare ? ([['compare key', compare, byKey]] as const) : [];
        const runs = round % 2 === 0 ? [...grantdRuns, ...compareRuns] : [...compareRuns, ...grantdRuns];
        for (const [label, server, headers] of [['express', express, byKey] as const, ...runs]) {
          const m = await drive(server, headers, bodiesFile);
          rows.push({ label, m });
          log(
            `round ${round + 1} (load ${load}) ${label.padEnd(12)} ${m.rps.toFixed(0).padStart(6)} rps  ${m.cpuUsPerRequest.toFixed(1).padStart(6)} us CPU/request  p99 ${m.p99Ms?.toFixed(2)} ms  errors ${m.errors}`,
          );
        }
      }
    } finally {
      await express.proc.stop();
      await grantd.proc.stop();
      await compare?.proc.stop();
    }
    const summary: Record<string, { rps: number[]; cpu_us: number[] }> = {};
    for (const { label, m } of rows) {
      summary[label] ??= { rps: [], cpu_us: [] };
      summary[label].rps.push(Math.round(m.rps));
      summary[label].cpu_us.push(Number(m.cpuUsPerRequest.toFixed(1)));
    }
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    for (const child of children) killHard(child);
    if (created && !values.keep) await dropDatabase(created);
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
