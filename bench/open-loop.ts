/**
 * The open-loop load of `check_fixed_rate`, in a child process of its own: the benchmark's process
 * holds the datasets, and its garbage collections would show as latency in a load it also timed.
 * Run as `node --import tsx bench/open-loop.ts <job.json>`; prints the run's RunStats as JSON.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile, type RunStats } from './scenarios.ts';

interface Job {
  url: string;
  path: string;
  headers: Record<string, string>;
  /** POST (the default): `bodiesFile` holds the bodies; GET: it holds each request's query string (`?...`), appended to `path`. */
  method?: 'GET' | 'POST';
  bodiesFile: string;
  /** A JSON array of Authorization headers, the request's taken at the body's index (many tenants); else `headers` alone. */
  authorizationsFile?: string;
  /** Whether to return every 2xx answer's request index, due time (ms from the run's start) and latency: `samples`. */
  samples?: boolean;
  /** Open loop: requests due at this rate a second. */
  rate?: number;
  /** Closed loop instead: this many keep-alive connections, each sending its next request when its answer arrives. */
  connections?: number;
  durationS: number;
}

/**
 * Request n is due at start + n / rate and is sent then on a free connection of a pool of
 * OPEN_LOOP_POOL keep-alive connections opened before the first is due, as wrk2's `-c` does and as
 * a client of an authorization service holds its connections (a load that opened one whenever none
 * was free measured the server's accepts once it fell behind: bench/README.md#the-open-loops-pool).
 * When none is free the request waits for one, and its latency counts from when it fell due (when
 * the timer took it up), not from its send: sends never wait on answers, so a stall of the server
 * shows in the latencies (no coordinated omission). How late the timer took up a due request (Node's
 * timers have 1 ms granularity) is reported apart, as `late_p99_ms`, and the connections the run
 * opened as `opened`. Hand-written because autocannon's rate limit sends each connection's budget
 * of a second back to back, then waits (lib/httpClient.js): that measures bursts. It speaks HTTP/1.1
 * over plain sockets (requests prebuilt, answers delimited by Content-Length), as wrk2 does, rather
 * than through node:http's client: that client costs about as much CPU per request as the server
 * under test, which on a machine of few cores the load and the server share.
 */
const TIMEOUT_MS = 10_000;
/** The open loop's keep-alive connections: 64 requests in flight at 1,000/s is a stall of 64 ms. */
const OPEN_LOOP_POOL = 64;

/** A run's stats, how late its sends were against the schedule (open loop), and how many connections it opened. */
export type OpenLoopStats = RunStats & {
  late_p99_ms: number | null;
  opened: number;
  /** With `samples`: the epoch ms of the run's start, and [request index, due ms from the start, latency ms] of each 2xx answer, flat. */
  startedAtMs?: number;
  samples?: number[];
};

/**
 * The closed loop (`connections`) is the saturation load of `check`, `check_token` and
 * `check_bulk_100`, for grantd and the bare Express app alike: autocannon parses each answer's
 * headers in JavaScript, which cost it 49-56 us of CPU per grantd answer (seven more headers) against
 * 28-34 per bare Express answer, on the cores the servers share (bench/README.md#saturation-load).
 */
function openLoop(job: Job, bodies: string[], authorizations: string[] | null): Promise<OpenLoopStats> {
  const target = new URL(job.path, job.url);
  const headers = `Host: ${target.host}\r\n${Object.entries(job.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}`;
  const requestOf =
    job.method === 'GET'
      ? (query: string, more: string) => `GET ${target.pathname}${query} HTTP/1.1\r\n${headers}${more}\r\n`
      : (body: string, more: string) =>
          `POST ${target.pathname} HTTP/1.1\r\n${headers}${more}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const request = (n: number) =>
    requestOf(bodies[n % bodies.length]!, authorizations ? `authorization: ${authorizations[n % authorizations.length]}\r\n` : '');
  const samples: number[] = [];
  const latencies: number[] = [];
  const lateness: number[] = [];
  const statuses: Record<string, number> = {};
  const idle: Connection[] = [];
  /** Open loop: requests due while no connection was free (their body's index, and when they were taken up). */
  const waiting: { n: number; takenUpAt: number }[] = [];
  const open = new Set<Connection>();
  const closed = job.connections !== undefined;
  const total = closed ? Infinity : Math.round(job.rate! * job.durationS);
  const dueAt = (n: number) => start + (n * 1000) / job.rate!;
  const endAt = performance.now() + job.durationS * 1000;
  let [ok, failed, sent, settled, opened] = [0, 0, 0, 0, 0];
  let finish: () => void = () => undefined;
  let start = performance.now();

  /** `since`: when the request was due (open loop) or sent (closed loop); its latency counts from then. */
  const settle = (status: number | null, since: number, n: number) => {
    if (status === null) failed++;
    else {
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status >= 200 && status < 300) {
        ok++;
        const latency = performance.now() - since;
        latencies.push(latency);
        if (job.samples) samples.push(n, since - start, latency);
      } else failed++;
    }
    if (++settled === total) finish();
  };

  /** One keep-alive connection carrying one request at a time. */
  class Connection {
    private readonly socket: Socket;
    private received: Buffer = Buffer.alloc(0);
    /** When the request under way was due (open loop) or sent (closed loop); null when none is. */
    private since: number | null = null;
    /** The request under way's index. */
    private n = 0;
    readonly connected: Promise<void>;

    constructor() {
      open.add(this);
      opened++;
      this.socket = connect({ host: target.hostname, port: Number(target.port), noDelay: true });
      // Settled by the socket's end too: a pool is started with the connections still open.
      this.connected = new Promise((resolve) => {
        this.socket.once('connect', () => resolve());
        this.socket.once('close', () => resolve());
      });
      this.socket.on('data', (chunk: Buffer) => this.receive(chunk));
      this.socket.on('error', () => undefined); // 'close' follows
      this.socket.on('close', () => this.fail());
    }

    send(n: number, since = performance.now()): void {
      this.since = since;
      this.n = n;
      this.socket.write(request(n));
    }

    private receive(chunk: Buffer): void {
      this.received = this.received.length === 0 ? chunk : Buffer.concat([this.received, chunk]);
      const headEnd = this.received.indexOf('\r\n\r\n');
      if (headEnd < 0 || this.since === null) return;
      const headers = this.received.toString('latin1', 0, headEnd);
      const length = /\r\ncontent-length: *(\d+)/i.exec(headers);
      // Both servers measured send Content-Length; anything else is counted as a failure.
      if (!length) {
        this.socket.destroy();
        return;
      }
      if (this.received.length < headEnd + 4 + Number(length[1])) return;
      const since = this.since;
      this.since = null;
      this.received = Buffer.alloc(0);
      settle(Number(headers.slice(9, 12)), since, this.n);
      if (/\r\nconnection: *close/i.test(headers)) this.socket.destroy();
      else if (closed) this.next();
      else this.free();
    }

    /** Open loop: the longest-waiting request, or back to the idle connections. */
    free(): void {
      const next = waiting.shift();
      if (next) this.send(next.n, next.takenUpAt);
      else idle.push(this);
    }

    /** Closed loop: the connection's next request, until the run's time is up. */
    next(): void {
      if (performance.now() < endAt) this.send(sent++);
      else this.close();
    }

    private fail(): void {
      open.delete(this);
      const at = idle.indexOf(this);
      if (at >= 0) idle.splice(at, 1);
      if (this.since !== null) {
        this.since = null;
        settle(null, 0, this.n);
      }
      // A connection the server ended is replaced while the run lasts; a closed loop ends with its last one.
      if (closed && performance.now() < endAt) new Connection().next();
      else if (closed && open.size === 0) finish();
      else if (!closed && settled < total) new Connection().free();
    }

    /** Ends the connection if its answer is overdue (checked once a second rather than a timer per request). */
    expireIfSentBefore(limit: number): void {
      if (this.since !== null && this.since < limit) this.socket.destroy();
    }

    close(): void {
      this.socket.destroy();
    }
  }

  return new Promise((resolve) => {
    const expiry = setInterval(() => {
      for (const connection of open) connection.expireIfSentBefore(performance.now() - TIMEOUT_MS);
    }, 1000);
    finish = () => {
      clearInterval(expiry);
      for (const connection of open) connection.close();
      latencies.sort((a, b) => a - b);
      lateness.sort((a, b) => a - b);
      const seconds = (performance.now() - start) / 1000;
      resolve({
        rps: ok / seconds,
        p50_ms: percentile(latencies, 0.5),
        p95_ms: percentile(latencies, 0.95),
        p99_ms: percentile(latencies, 0.99),
        p999_ms: percentile(latencies, 0.999),
        errors: failed,
        requests: sent,
        seconds,
        statuses,
        late_p99_ms: percentile(lateness, 0.99),
        opened,
        ...(job.samples ? { startedAtMs: performance.timeOrigin + start, samples } : {}),
      });
    };
    const tick = () => {
      for (const now = performance.now(); sent < total && dueAt(sent) <= now; sent++) {
        lateness.push(now - dueAt(sent));
        const connection = idle.pop();
        if (connection) connection.send(sent, now);
        else waiting.push({ n: sent, takenUpAt: now });
      }
      if (sent < total) setTimeout(tick, Math.max(0, dueAt(sent) - performance.now()));
    };
    if (closed) for (let i = 0; i < job.connections!; i++) new Connection().next();
    else {
      const pool = Array.from({ length: OPEN_LOOP_POOL }, () => new Connection());
      void Promise.all(pool.map((connection) => connection.connected)).then(() => {
        idle.push(...pool.filter((connection) => open.has(connection)));
        start = performance.now();
        tick();
      });
    }
  });
}

/** A load's child process, started and ready (its modules loaded, its bodies read): `go` runs the load. */
export interface ReadyLoad {
  go(): Promise<OpenLoopStats>;
}

/**
 * Starts a load's child process and resolves once it is ready to send. Starting a child costs
 * about a second of CPU (tsx compiles this file): a load that starts beside a measured one must
 * do that before the measured one runs, or the measured one's first second shares the cores with
 * the children's start rather than with their load (bench/README.md#noisy_neighbour-benchnoisyts).
 */
export function prepareOpenLoop(job: Job): Promise<ReadyLoad> {
  const jobFile = `${job.bodiesFile}.job.json`;
  writeFileSync(jobFile, JSON.stringify(job));
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), jobFile], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let ready: () => void = () => undefined;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.startsWith(READY)) ready();
  });
  const exited = new Promise<OpenLoopStats>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.slice(READY.length)) as OpenLoopStats) : reject(new Error(`open-loop load exited with ${code}`)),
    );
  });
  return Promise.race([isReady, exited.then(() => Promise.reject(new Error('open-loop load exited before it was ready')))]).then(() => ({
    go: () => {
      child.stdin.end(GO);
      return exited;
    },
  }));
}

/** Runs one open-loop load in a child process; `bodiesFile` holds the request bodies as a JSON array. */
export async function openLoopInChild(job: Job): Promise<OpenLoopStats> {
  return (await prepareOpenLoop(job)).go();
}

/** The child's line once ready, and the parent's word to begin. */
const READY = 'ready\n';
const GO = 'go\n';

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const job = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Job;
  const read = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as string[];
  const bodies = read(job.bodiesFile);
  const authorizations = job.authorizationsFile ? read(job.authorizationsFile) : null;
  process.stdout.write(READY);
  await new Promise((resolve) => process.stdin.once('data', resolve));
  const stats = await openLoop(job, bodies, authorizations);
  process.stdout.write(JSON.stringify(stats));
}
