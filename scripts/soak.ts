/**
 * npm run soak [-- --seconds N]: mixed load on a fresh grantd for 5 minutes (default), then a report:
 * requests, errors (any non-2xx or socket error), throughput, latency, and the server's resident
 * memory sampled every 10 s. Fails when there was an error or memory kept growing. Not part of CI.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { packageRoot } from '../src/package-root.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '300' } } });
const seconds = Number(values.seconds);
const serverUrl = process.env.GRANTD_SOAK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = `grantd_soak_${randomBytes(4).toString('hex')}`;

const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const url = new URL(serverUrl);
url.pathname = `/${database}`;

const child = spawn(process.execPath, [join(packageRoot(), 'bin', 'grantd.js'), 'serve'], {
  env: { ...process.env, DATABASE_URL: url.toString(), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let output = '';
child.stdout.on('data', (c: Buffer) => (output += c.toString()));
child.stderr.on('data', (c: Buffer) => (output += c.toString()));
const { base, key } = await new Promise<{ base: string; key: string }>((resolve, reject) => {
  const timer = setInterval(() => {
    const port = /"port":(\d+)/.exec(output)?.[1];
    const secret = /^\s+(svc_live_[A-Za-z0-9]+)$/m.exec(output)?.[1];
    if (port && secret) {
      clearInterval(timer);
      resolve({ base: `http://127.0.0.1:${port}`, key: secret });
    }
  }, 50);
  child.once('exit', (code) => reject(new Error(`grantd exited with ${code}:\n${output}`)));
});
const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
const post = async (path: string, body: unknown) => {
  const res = await fetch(base + path, { method: 'POST', headers, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
};

// A small graph: 50 folders of 40 documents, owners, groups viewing folders, agents bound to users.
await post('/v1/namespaces', { name: 'group', relations: { member: {} } });
await post('/v1/namespaces', { name: 'folder', relations: { parent: {}, viewer: { includes: ['parent->viewer'] } } });
await post('/v1/namespaces', {
  name: 'document',
  relations: { parent: {}, owner: {}, editor: { includes: ['owner'] }, viewer: { includes: ['editor', 'parent->viewer'] } },
});
const writes = [];
for (let d = 0; d < 2000; d++) {
  writes.push({ subject: `folder:f${d % 50}`, relation: 'parent', object: `document:d${d}` });
  writes.push({ subject: `user:u${d % 500}`, relation: 'owner', object: `document:d${d}` });
}
for (let f = 0; f < 50; f++) writes.push({ subject: `group:g${f % 20}`, relation: 'viewer', object: `folder:f${f}` });
for (let u = 0; u < 500; u++) writes.push({ subject: `user:u${u}`, relation: 'member', object: `group:g${u % 20}` });
for (let i = 0; i < writes.length; i += 1000) await post('/v1/grants/batch', { writes: writes.slice(i, i + 1000) });
for (let a = 0; a < 20; a++) {
  await post('/v1/agents', { external_id: `a${a}`, scope: ['document:viewer'] });
  await post('/v1/grants', { subject: `agent:a${a}`, relation: 'member', object: `user:u${a}` });
}

let n = 0;
const check = (i: number) => ({
  subject: i % 10 === 0 ? `agent:a${i % 20}` : `user:u${i % 500}`,
  relation: 'viewer',
  object: `document:d${(i * 7) % 2000}`,
});
const requests = [
  (i: number) => ({ method: 'POST', path: '/v1/check', body: JSON.stringify(check(i)) }),
  (i: number) => ({ method: 'POST', path: '/v1/check', body: JSON.stringify(check(i + 1)) }),
  (i: number) => ({ method: 'POST', path: '/v1/check/bulk', body: JSON.stringify({ checks: Array.from({ length: 20 }, (_, k) => check(i + k)) }) }),
  (i: number) => ({ method: 'GET', path: `/v1/objects?namespace=document&subject=user:u${i % 500}&relation=viewer&limit=50` }),
  (i: number) => ({
    method: 'POST',
    path: '/v1/grants',
    body: JSON.stringify({ subject: `user:s${i % 1000}`, relation: 'viewer', object: `document:d${i % 2000}` }),
  }),
  (i: number) => ({
    method: 'DELETE',
    path: '/v1/grants',
    body: JSON.stringify({ subject: `user:s${(i + 500) % 1000}`, relation: 'viewer', object: `document:d${(i + 500) % 2000}` }),
  }),
];

const memory: number[] = [];
const sampleMemory = async () => {
  const text = await (await fetch(`${base}/metrics`)).text();
  memory.push(Number(/^grantd_process_resident_memory_bytes (\S+)$/m.exec(text)?.[1] ?? NaN) / 2 ** 20);
};
await sampleMemory();
const sampler = setInterval(() => void sampleMemory(), 10_000);
/** The parts of autocannon's API used here (it ships no types). */
interface LoadRequest {
  method?: string;
  path?: string;
  body?: string;
  headers?: Record<string, string>;
}
interface LoadOptions {
  url: string;
  connections: number;
  duration: number;
  requests: { setupRequest: (req: LoadRequest) => LoadRequest }[];
}
type Autocannon = (options: LoadOptions, done: (error: Error | null, result: LoadResult) => void) => unknown;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
interface LoadResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}
const result = await new Promise<LoadResult>((resolve, reject) => {
  autocannon(
    {
      url: base,
      connections: 16,
      duration: seconds,
      // A headers object of its own per request: autocannon writes Content-Length into it, which
      // a shared object would carry over to the next GET.
      requests: [{ setupRequest: (req) => ({ ...req, headers: { ...headers }, ...requests[n % requests.length]!(n++) }) }],
    },
    (error, done) => (error ? reject(error) : resolve(done)),
  );
});
clearInterval(sampler);
await sampleMemory();

child.kill('SIGTERM');
await new Promise((resolve) => child.once('exit', resolve));
await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
await admin.end();

const errors = result.non2xx + result.errors + result.timeouts;
// Flat memory: the last third of the run holds no more than 20% above the middle third's peak.
const third = Math.max(1, Math.floor(memory.length / 3));
const middlePeak = Math.max(...memory.slice(third, 2 * third));
const lastPeak = Math.max(...memory.slice(2 * third));
const flat = !(lastPeak > middlePeak * 1.2);
console.log(
  JSON.stringify(
    {
      seconds,
      requests: result.requests.total,
      rps: Math.round(result.requests.average),
      p50_ms: result.latency.p50,
      p99_ms: result.latency.p99,
      errors,
      statuses: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count])),
      memory_mb: {
        start: Math.round(memory[0]!),
        middle_peak: Math.round(middlePeak),
        last_peak: Math.round(lastPeak),
        end: Math.round(memory.at(-1)!),
      },
      memory_flat: flat,
    },
    null,
    2,
  ),
);
process.exitCode = errors === 0 && flat ? 0 : 1;
