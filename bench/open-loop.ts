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
  bodiesFile: string;
  /** Open loop: requests due at this rate a second. */
  rate?: number;
  /** Closed loop instead: this many keep-alive connections, each sending its next request when its answer arrives. */
  connections?: number;
  durationS: number;
}

/**
 * Request n is due at start + n / rate and is sent then on any free keep-alive connection (more
 * are opened when none is free): sends never wait for answers, so a stall of the server shows in
 * the latencies instead of slowing the load (no coordinated omission). Latency counts from the
 * send; how late sends were against the schedule (Node's timers have 1 ms granularity) is reported
 * apart, as `late_p99_ms`, and the connections the run opened as `opened`: a server that falls
 * behind is sent each request on a new connection, which costs it far more than a request on an
 * open one (bench/README.md#the-fixed-rate-tail-session-17-2026-11-24). Hand-written because autocannon's rate limit sends each connection's
 * budget of a second back to back, then waits (lib/httpClient.js): that measures bursts. It speaks
 * HTTP/1.1 over plain sockets (requests prebuilt, answers delimited by Content-Length), as wrk2
 * does, rather than through node:http's client: that client costs about as much CPU per request as
 * the server under test, which on a machine of few cores the load and the server share.
 */
const TIMEOUT_MS = 10_000;

/** A run's stats, how late its sends were against the schedule (open loop), and how many connections it opened. */
export type OpenLoopStats = RunStats & { late_p99_ms: number | null; opened: number };

/**
 * The closed loop (`connections`) is the saturation load of `check`, `check_token` and
 * `check_bulk_100`, for grantd and the bare Express app alike: autocannon parses each answer's
 * headers in JavaScript, which cost it 49-56 us of CPU per grantd answer (seven more headers) against
 * 28-34 per bare Express answer, on the cores the servers share (bench/README.md#saturation-load).
 */
function openLoop(job: Job, bodies: string[]): Promise<OpenLoopStats> {
  const target = new URL(job.path, job.url);
  const head = `POST ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\n${Object.entries(job.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}`;
  const latencies: number[] = [];
  const lateness: number[] = [];
  const statuses: Record<string, number> = {};
  const idle: Connection[] = [];
  const open = new Set<Connection>();
  const closed = job.connections !== undefined;
  const total = closed ? Infinity : Math.round(job.rate! * job.durationS);
  const dueAt = (n: number) => start + (n * 1000) / job.rate!;
  const endAt = performance.now() + job.durationS * 1000;
  let [ok, failed, sent, settled, opened] = [0, 0, 0, 0, 0];
  let finish: () => void = () => undefined;
  const start = performance.now();

  const settle = (status: number | null, sentAt: number) => {
    if (status === null) failed++;
    else {
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status >= 200 && status < 300) {
        ok++;
        latencies.push(performance.now() - sentAt);
      } else failed++;
    }
    if (++settled === total) finish();
  };

  /** One keep-alive connection carrying one request at a time. */
  class Connection {
    private readonly socket: Socket;
    private received: Buffer = Buffer.alloc(0);
    private sentAt: number | null = null;

    constructor() {
      open.add(this);
      opened++;
      this.socket = connect({ host: target.hostname, port: Number(target.port), noDelay: true });
      this.socket.on('data', (chunk: Buffer) => this.receive(chunk));
      this.socket.on('error', () => undefined); // 'close' follows
      this.socket.on('close', () => this.fail());
    }

    /** Returns when the request was handed to the socket. */
    send(body: string): number {
      this.sentAt = performance.now();
      this.socket.write(`${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      return this.sentAt;
    }

    private receive(chunk: Buffer): void {
      this.received = this.received.length === 0 ? chunk : Buffer.concat([this.received, chunk]);
      const headEnd = this.received.indexOf('\r\n\r\n');
      if (headEnd < 0 || this.sentAt === null) return;
      const headers = this.received.toString('latin1', 0, headEnd);
      const length = /\r\ncontent-length: *(\d+)/i.exec(headers);
      // Both servers measured send Content-Length; anything else is counted as a failure.
      if (!length) {
        this.socket.destroy();
        return;
      }
      if (this.received.length < headEnd + 4 + Number(length[1])) return;
      const sentAt = this.sentAt;
      this.sentAt = null;
      this.received = Buffer.alloc(0);
      settle(Number(headers.slice(9, 12)), sentAt);
      if (/\r\nconnection: *close/i.test(headers)) this.socket.destroy();
      else if (closed) this.next();
      else idle.push(this);
    }

    /** Closed loop: the connection's next request, until the run's time is up. */
    next(): void {
      if (performance.now() < endAt) this.send(bodies[sent++ % bodies.length]!);
      else this.close();
    }

    private fail(): void {
      open.delete(this);
      const at = idle.indexOf(this);
      if (at >= 0) idle.splice(at, 1);
      if (this.sentAt !== null) {
        this.sentAt = null;
        settle(null, 0);
      }
      // Closed loop: a connection the server ended is replaced while the run lasts; the run ends with the last one.
      if (closed && performance.now() < endAt) new Connection().next();
      else if (closed && open.size === 0) finish();
    }

    /** Ends the connection if its answer is overdue (checked once a second rather than a timer per request). */
    expireIfSentBefore(limit: number): void {
      if (this.sentAt !== null && this.sentAt < limit) this.socket.destroy();
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
        errors: failed,
        requests: sent,
        seconds,
        statuses,
        late_p99_ms: percentile(lateness, 0.99),
        opened,
      });
    };
    const tick = () => {
      for (const now = performance.now(); sent < total && dueAt(sent) <= now; sent++) {
        const sentAt = (idle.pop() ?? new Connection()).send(bodies[sent % bodies.length]!);
        lateness.push(sentAt - dueAt(sent));
      }
      if (sent < total) setTimeout(tick, Math.max(0, dueAt(sent) - performance.now()));
    };
    if (closed) for (let i = 0; i < job.connections!; i++) new Connection().next();
    else tick();
  });
}

/** Runs one open-loop load in a child process; `bodiesFile` holds the request bodies as a JSON array. */
export function openLoopInChild(job: Job): Promise<OpenLoopStats> {
  const jobFile = `${job.bodiesFile}.job.json`;
  writeFileSync(jobFile, JSON.stringify(job));
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), jobFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as OpenLoopStats) : reject(new Error(`open-loop load exited with ${code}`))));
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const job = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Job;
  const stats = await openLoop(job, JSON.parse(readFileSync(job.bodiesFile, 'utf8')) as string[]);
  process.stdout.write(JSON.stringify(stats));
}
