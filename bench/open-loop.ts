/**
 * The open-loop load of `check_fixed_rate`, in a child process of its own: the benchmark's process
 * holds the datasets, and its garbage collections would show as latency in a load it also timed.
 * Run as `node --import tsx bench/open-loop.ts <job.json>`; prints the run's RunStats as JSON.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile, type RunStats } from './scenarios.ts';

interface Job {
  url: string;
  path: string;
  headers: Record<string, string>;
  bodiesFile: string;
  rate: number;
  durationS: number;
}

/**
 * Request n is due at start + n / rate and is sent then on any free keep-alive connection (more
 * are opened when none is free): sends never wait for answers, so a stall of the server shows in
 * the latencies instead of slowing the load (no coordinated omission). Latency counts from the
 * send; how late sends were against the schedule (Node's timers have 1 ms granularity) is reported
 * apart, as `late_p99_ms`. Hand-written because autocannon's rate limit sends each connection's
 * budget of a second back to back, then waits (lib/httpClient.js): that measures bursts.
 */
function openLoop(job: Job, bodies: string[]): Promise<RunStats & { late_p99_ms: number | null }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const target = new URL(job.path, job.url);
  const latencies: number[] = [];
  const lateness: number[] = [];
  const statuses: Record<string, number> = {};
  const total = Math.round(job.rate * job.durationS);
  const dueAt = (n: number) => start + (n * 1000) / job.rate;
  let [ok, failed, sent, settled] = [0, 0, 0, 0];
  const start = performance.now();
  return new Promise((resolve) => {
    const settle = () => {
      if (++settled < total) return;
      agent.destroy();
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
      });
    };
    const send = (due: number, body: string) => {
      const sentAt = performance.now();
      lateness.push(sentAt - due);
      const req = request(target, { method: 'POST', agent, headers: { ...job.headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (status >= 200 && status < 300) {
            ok++;
            latencies.push(performance.now() - sentAt);
          } else failed++;
          settle();
        });
      });
      req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        failed++;
        settle();
      });
      req.end(body);
    };
    const tick = () => {
      for (const now = performance.now(); sent < total && dueAt(sent) <= now; sent++) send(dueAt(sent), bodies[sent % bodies.length]!);
      if (sent < total) setTimeout(tick, Math.max(0, dueAt(sent) - performance.now()));
    };
    tick();
  });
}

/** Runs one open-loop load in a child process; `bodiesFile` holds the request bodies as a JSON array. */
export function openLoopInChild(job: Job): Promise<RunStats & { late_p99_ms: number | null }> {
  const jobFile = `${job.bodiesFile}.job.json`;
  writeFileSync(jobFile, JSON.stringify(job));
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), jobFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as RunStats & { late_p99_ms: number | null }) : reject(new Error(`open-loop load exited with ${code}`))));
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const job = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Job;
  const stats = await openLoop(job, JSON.parse(readFileSync(job.bodiesFile, 'utf8')) as string[]);
  process.stdout.write(JSON.stringify(stats));
}
