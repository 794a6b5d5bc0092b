/**
 * What one POST /v1/check allocates on grantd's heap, against the bare Express app's (bench/README.md,
 * "What a check allocates"). Allocation is what fills the young generation and so sets how often a
 * worker pauses to collect it; unlike latency or CPU it does not move with the shared machine's load.
 *
 * grantd's app (createServices, createApp, createHttpServer, as `grantd serve` builds them) and the
 * bare Express app (bench/express-baseline.ts) are served from this process and driven by a closed
 * loop of prebuilt requests over loopback sockets, one request at a time by default (as an open loop
 * at 1,000/s mostly finds the server idle). The heap's used size is read around every batch of
 * requests; a batch during which a collection ran (PerformanceObserver's `gc` entries) is left out,
 * so the others' growth is what they allocated. The driver's own allocations (a write of a prebuilt
 * buffer, the answer's chunk) fall on both servers alike: grantd minus bare is what grantd adds.
 * With `--sites`, V8's sampling heap profiler (objects collected since counted too) over one more
 * run names where grantd's bytes are allocated: each sample is charged to the innermost frame of
 * grantd's code or of a package, so that Node's internals count against the call that made them.
 *
 * Run: `node --import tsx bench/check-alloc.ts [--checks 20000] [--connections 1] [--log-level warn]
 * [--sites [--top 30] [--save-profile FILE.heapprofile]] [--keep] [--database-url URL --key KEY]`. Without --database-url it loads
 * dataset S through a grantd of this checkout's build (~100 s) into a database of its own, dropped
 * at the end unless --keep (which prints the --database-url and --key to reuse).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { Session } from 'node:inspector/promises';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { createApp } from '../src/http/app.ts';
import { httpOptions } from '../src/http/options.ts';
import { createHttpServer } from '../src/http/server.ts';
import { createServices } from '../src/runtime.ts';
import { checkMix, Dataset } from './dataset.ts';
import { bareExpressApp } from './express-baseline.ts';
import { Api, holdInMemory, loadGrantd } from './load.ts';
import { children, createDatabase, dropDatabase, ensureBuilt, killHard, ROOT, SCRATCH, startGrantd } from './servers.ts';

const { values } = parseArgs({
  options: {
    checks: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '50' },
    connections: { type: 'string', default: '1' },
    'log-level': { type: 'string', default: 'warn' },
    sites: { type: 'boolean', default: false },
    survivors: { type: 'boolean', default: false },
    top: { type: 'string', default: '30' },
    'save-profile': { type: 'string' },
    'database-url': { type: 'string' },
    key: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const checks = Number(values.checks);
const batch = Number(values.batch);
const connections = Number(values.connections);
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

/** Requests `prebuilt` round-robin, `connections` at a time; resolves once `count` are answered, calling `everyBatch` after each `batch` answers. */
function drive(port: number, prebuilt: Buffer[], count: number, everyBatch: () => void = () => undefined): Promise<{ failed: number }> {
  let [sent, answered, failed] = [0, 0, 0];
  return new Promise((resolve, reject) => {
    const sockets: Socket[] = [];
    const next = (socket: Socket) => {
      if (sent < count) socket.write(prebuilt[sent++ % prebuilt.length]!);
    };
    for (let i = 0; i < Math.min(connections, count); i++) {
      const socket = connect({ host: '127.0.0.1', port, noDelay: true });
      sockets.push(socket);
      let pending: Buffer | null = null;
      socket.on('error', reject);
      socket.on('connect', () => next(socket));
      socket.on('data', (chunk: Buffer) => {
        const received = pending ? Buffer.concat([pending, chunk]) : chunk;
        // Answers are parsed without making strings: the head's end, Content-Length's digits, the status's first digit.
        const headEnd = received.indexOf(HEAD_END);
        const lengthAt = Math.max(received.indexOf(CONTENT_LENGTH), received.indexOf(CONTENT_LENGTH_LOWER));
        if (headEnd < 0 || lengthAt < 0 || lengthAt > headEnd) {
          pending = received;
          return;
        }
        let length = 0;
        for (let at = lengthAt + CONTENT_LENGTH.length; received[at]! >= 0x30 && received[at]! <= 0x39; at++)
          length = 10 * length + received[at]! - 0x30;
        if (received.length < headEnd + 4 + length) {
          pending = received;
          return;
        }
        pending = null;
        if (received[9] !== 0x32) failed++;
        if (++answered % batch === 0) everyBatch();
        if (answered === count) {
          for (const s of sockets) s.destroy();
          resolve({ failed });
        } else next(socket);
      });
    }
  });
}
const HEAD_END = Buffer.from('\r\n\r\n');
// As the app spelled it: Express's `Content-Length`, or in lower case.
const CONTENT_LENGTH = Buffer.from('\r\nContent-Length: ');
const CONTENT_LENGTH_LOWER = Buffer.from('\r\ncontent-length: ');

interface Allocation {
  /** Median over the batches with no collection, bytes a request. */
  medianBytes: number;
  /** Mean over the same batches. */
  meanBytes: number;
  cleanBatches: number;
  batches: number;
  collections: number;
  failed: number;
}

/** Bytes allocated a request on this process's heap, from the heap's growth over batches that no collection touched. */
async function allocation(port: number, prebuilt: Buffer[]): Promise<Allocation> {
  const gcs: { start: number; end: number }[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcs.push({ start: entry.startTime, end: entry.startTime + entry.duration });
  });
  observer.observe({ entryTypes: ['gc'] });
  const spans: { start: number; end: number; bytes: number }[] = [];
  let start = performance.now();
  let used = v8.getHeapStatistics().used_heap_size;
  const { failed } = await drive(port, prebuilt, checks, () => {
    const nowUsed = v8.getHeapStatistics().used_heap_size;
    const now = performance.now();
    spans.push({ start, end: now, bytes: nowUsed - used });
    // Read again: the reading and the push above are the script's, not the requests'.
    used = v8.getHeapStatistics().used_heap_size;
    start = performance.now();
  });
  // The observer's entries arrive in a later turn.
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  const clean = spans.filter((s) => !gcs.some((gc) => gc.end >= s.start && gc.start <= s.end)).map((s) => s.bytes / batch);
  clean.sort((a, b) => a - b);
  return {
    medianBytes: clean[Math.floor(clean.length / 2)] ?? NaN,
    meanBytes: clean.reduce((sum, b) => sum + b, 0) / clean.length,
    cleanBatches: clean.length,
    batches: spans.length,
    collections: gcs.length,
    failed,
  };
}

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Where the bytes of `count` requests are allocated, from V8's sampling heap profiler: bytes a request by site. */
async function allocationSites(port: number, prebuilt: Buffer[], count: number, survivors = false): Promise<{ site: string; bytes: number }[]> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 256,
    includeObjectsCollectedByMajorGC: !survivors,
    includeObjectsCollectedByMinorGC: !survivors,
  });
  await drive(port, prebuilt, count);
  if (survivors) (globalThis as { gc?: () => void }).gc?.();
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: ProfileNode } };
  session.disconnect();
  if (values['save-profile']) writeFileSync(values['save-profile'], JSON.stringify(profile));
  const bySite = new Map<string, number>();
  // Each node is charged to the innermost frame on its stack that is grantd's code or a package's.
  const walk = (node: ProfileNode, owner: string) => {
    const own = siteOf(node.callFrame) ?? owner;
    if (node.selfSize > 0) bySite.set(own, (bySite.get(own) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, own);
  };
  walk(profile.head, '(Node.js, outside any call of grantd or a package)');
  return [...bySite].map(([site, bytes]) => ({ site, bytes: bytes / count })).sort((a, b) => b.bytes - a.bytes);
}

/** `file:line function` for a frame of this checkout's code or of a package; null for Node's own. */
function siteOf({ functionName, url, lineNumber }: ProfileNode['callFrame']): string | null {
  const at = url.indexOf('/node_modules/');
  const file = at >= 0 ? url.slice(at + '/node_modules/'.length) : url.startsWith(`file://${ROOT}/`) ? url.slice(`file://${ROOT}/`.length) : null;
  return file === null ? null : `${file}:${lineNumber + 1} ${functionName || '(anonymous)'}`;
}

/** The request for each body, as a client sends it over a kept connection. */
function requests(port: number, key: string, bodies: string[]): Buffer[] {
  return bodies.map((body) =>
    Buffer.from(
      `POST /v1/check HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    ),
  );
}

const listen = (server: Server) =>
  new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
const close = (server: Server) =>
  new Promise((resolve) => {
    server.close(resolve);
    server.closeAllConnections();
  });

async function main(): Promise<void> {
  const ds = new Dataset('S', 1);
  const bodies = checkMix(ds, 100_000, 3).map(({ subject, relation, object }) => JSON.stringify({ subject, relation, object }));
  let databaseUrl = values['database-url'];
  let key = values.key;
  let created: string | null = null;
  if (!databaseUrl || !key) {
    const note = ensureBuilt(log);
    if (note) log(note);
    const database = await createDatabase();
    created = database.name;
    databaseUrl = database.url;
    const loader = await startGrantd(ROOT, databaseUrl, 1);
    key = loader.adminKey!;
    log(`loading dataset S into ${created}`);
    const loaded = await loadGrantd(new Api(loader.url, key), ds, log);
    log(`loaded ${loaded.grants} grants in ${loaded.seconds.toFixed(0)} s`);
    await loader.proc.stop();
    if (values.keep) {
      mkdirSync(SCRATCH, { recursive: true });
      writeFileSync(join(SCRATCH, 'check-alloc-database'), `--database-url ${databaseUrl} --key ${key}\n`);
      log(`kept: --database-url ${databaseUrl} --key ${key} (also in bench-scratch/check-alloc-database)`);
    }
  }
  const config = loadConfig({ ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: values['log-level'] });
  // At a level that logs requests, the lines go where a deployment's would, but not to this script's output.
  const logger = pino({ level: config.LOG_LEVEL, base: { service: 'grantd' } }, pino.destination({ dest: '/dev/null', sync: false }));
  const services = createServices(databaseUrl, config, logger);
  const grantd = createHttpServer(createApp(services, httpOptions(config)), httpOptions(config));
  const bare = createHttpServer(bareExpressApp());
  try {
    const grantdPort = await listen(grantd);
    const barePort = await listen(bare);
    const api = new Api(`http://127.0.0.1:${grantdPort}`, key);
    const held = await holdInMemory([{ api, check: checkMix(ds, 100, 2)[0]! }], 1, [...ds.triples()].length + ds.sizes.agents);
    if (held === null) throw new Error('the tenant was not held in memory within the timeout');
    const grantdRequests = requests(grantdPort, key, bodies);
    const bareRequests = requests(barePort, key, bodies);
    // Warm-up: the JIT, both apps.
    await drive(grantdPort, grantdRequests, checks);
    await drive(barePort, bareRequests, checks);
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    const grantdBytes = await allocation(grantdPort, grantdRequests);
    const bareBytes = await allocation(barePort, bareRequests);
    const row = (label: string, a: Allocation) =>
      `${label.padEnd(12)} ${a.medianBytes.toFixed(0).padStart(7)} bytes/request (median; mean ${a.meanBytes.toFixed(0)}) over ${a.cleanBatches} of ${a.batches} batches of ${batch}; ${a.collections} collections; ${a.failed} not 2xx`;
    process.stdout.write(
      `${checks} requests a server, ${connections} connection(s), LOG_LEVEL=${config.LOG_LEVEL}, load ${load}\n` +
        `${row('grantd', grantdBytes)}\n${row('bare Express', bareBytes)}\n` +
        `grantd adds ${(grantdBytes.medianBytes - bareBytes.medianBytes).toFixed(0)} bytes a check\n`,
    );
    if (values.sites) {
      const sites = await allocationSites(grantdPort, grantdRequests, checks);
      const total = sites.reduce((sum, s) => sum + s.bytes, 0);
      process.stdout.write(`\ngrantd's allocation sites (sampling heap profiler, ${total.toFixed(0)} bytes a request in all):\n`);
      for (const { site, bytes } of sites.slice(0, Number(values.top))) process.stdout.write(`${bytes.toFixed(0).padStart(7)}  ${site}\n`);
    }
    if (values.survivors) {
      const sites = await allocationSites(grantdPort, grantdRequests, checks, true);
      const total = sites.reduce((sum, s) => sum + s.bytes * checks, 0);
      process.stdout.write(
        `\nallocated over ${checks} requests and alive after them, what a scavenge then copies (${total.toFixed(0)} bytes in all):\n`,
      );
      for (const { site, bytes } of sites.slice(0, Number(values.top))) process.stdout.write(`${(bytes * checks).toFixed(0).padStart(9)}  ${site}\n`);
    }
  } finally {
    await close(bare);
    await close(grantd);
    await services.close();
    for (const child of children) killHard(child);
    if (created && !values.keep) await dropDatabase(created);
  }
}

await main();
