/**
 * Load runs: autocannon (programmatic) with request bodies or paths cycled from a pre-generated list
 * by setupRequest, one shared counter for all connections, so that consecutive requests differ.
 * Latencies are recorded from autocannon's per-response event with sub-millisecond precision
 * (autocannon's own histogram has 1 ms resolution, and its coordinated-omission correction at a fixed
 * rate uses a wrong expected interval), only for 2xx answers; rps counts 2xx answers per second.
 */
import autocannon from 'autocannon';
import type { Api } from './load.ts';

export interface RunStats {
  rps: number;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  /** The open loop's (bench/open-loop.ts): its 99.9th percentile. */
  p999_ms?: number | null;
  /** non-2xx answers plus socket errors and timeouts */
  errors: number;
  requests: number;
  seconds: number;
  statuses?: Record<string, number>;
}

export interface LoadSpec {
  method: 'GET' | 'POST';
  /** Paths cycled (GET), or one path. */
  paths: string[];
  /** Bodies cycled (POST), or made on the fly from a running counter. */
  bodies?: string[] | ((i: number) => string);
  connections: number;
  overallRate?: number;
  timeoutS?: number;
}

export function percentile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function cannon(url: string, headers: Record<string, string>, spec: LoadSpec, durationS: number): Promise<RunStats> {
  let counter = 0;
  const { bodies, paths } = spec;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let ok = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections: spec.connections,
        duration: durationS,
        timeout: spec.timeoutS ?? 10,
        ...(spec.overallRate ? { overallRate: spec.overallRate } : {}),
        requests: [
          {
            method: spec.method,
            headers,
            setupRequest: (request) => {
              const i = counter++;
              const body = bodies === undefined ? undefined : typeof bodies === 'function' ? bodies(i) : bodies[i % bodies.length];
              return { ...request, path: paths[i % paths.length], ...(body === undefined ? {} : { body }) };
            },
          },
        ],
      },
      (error, result) => {
        if (error) return reject(error);
        latencies.sort((a, b) => a - b);
        resolve({
          rps: ok / result.duration,
          p50_ms: percentile(latencies, 0.5),
          p95_ms: percentile(latencies, 0.95),
          p99_ms: percentile(latencies, 0.99),
          errors: result.non2xx + result.errors,
          requests: ok + result.non2xx,
          seconds: result.duration,
          statuses,
        });
      },
    );
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status >= 200 && status < 300) {
        ok++;
        latencies.push(ms);
      }
    });
  });
}

/**
 * Walks whole listings, one client, one page after another, for at least `durationS` (and at least
 * one whole walk). rps is objects per second over whole walks; latencies are per page.
 */
export async function walkFor(
  api: Api,
  subjects: string[],
  limit: number,
  durationS: number,
): Promise<RunStats & { walks: number; objectsPerWalk: number; pagesPerWalk: number }> {
  const latencies: number[] = [];
  const started = performance.now();
  let objects = 0;
  let walks = 0;
  let pages = 0;
  let errors = 0;
  do {
    const subject = subjects[walks % subjects.length]!;
    let cursor: string | null = null;
    do {
      const q = new URLSearchParams({ namespace: 'document', subject, relation: 'viewer', limit: String(limit) });
      if (cursor) q.set('cursor', cursor);
      const t = performance.now();
      const res = await fetch(`${api.url}/v1/objects?${q}`, { headers: api.headers(), signal: AbortSignal.timeout(120_000) });
      const text = await res.text();
      if (!res.ok) {
        errors++;
        break;
      }
      latencies.push(performance.now() - t);
      const page = JSON.parse(text) as { objects: string[]; next_cursor: string | null };
      objects += page.objects.length;
      pages++;
      cursor = page.next_cursor;
    } while (cursor);
    walks++;
  } while (performance.now() - started < durationS * 1000 && errors === 0);
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    rps: objects / seconds,
    p50_ms: percentile(latencies, 0.5),
    p95_ms: percentile(latencies, 0.95),
    p99_ms: percentile(latencies, 0.99),
    errors,
    requests: pages,
    seconds,
    walks,
    objectsPerWalk: objects / walks,
    pagesPerWalk: pages / walks,
  };
}

/** The median of the numbers given, nulls left out; null when none. */
export const median = (xs: (number | null)[]): number | null => {
  const v = xs.filter((x): x is number => x !== null).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
};

/**
 * The ratios of two alternating loads' rates run by run (measureAlternating's round i: A then B, or
 * B then A, minutes apart at most), and their median. A machine that slows between two runs moves
 * the medians of the two sides apart (A B B A A B: a slowdown after the third run takes two of A's
 * runs and one of B's), but moves only one ratio of the pairs.
 */
export function pairedRatios(a: readonly RunStats[], b: readonly RunStats[]): { ratios: number[]; median: number | null } {
  const ratios = a.flatMap((run, i) => (run.rps > 0 && (b[i]?.rps ?? 0) > 0 ? [run.rps / b[i]!.rps] : []));
  return { ratios, median: median(ratios) };
}

/** Each figure the median over the runs; errors the sum over the runs (warm-up excluded). */
export function medianOf<T extends RunStats>(runs: T[]): RunStats {
  return {
    rps: median(runs.map((r) => r.rps)) ?? 0,
    p50_ms: median(runs.map((r) => r.p50_ms)),
    p95_ms: median(runs.map((r) => r.p95_ms)),
    p99_ms: median(runs.map((r) => r.p99_ms)),
    ...(runs.some((r) => r.p999_ms !== undefined) ? { p999_ms: median(runs.map((r) => r.p999_ms ?? null)) } : {}),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    requests: runs.reduce((sum, r) => sum + r.requests, 0),
    seconds: runs.reduce((sum, r) => sum + r.seconds, 0),
    statuses: runs.reduce<Record<string, number>>((all, r) => {
      for (const [status, n] of Object.entries(r.statuses ?? {})) all[status] = (all[status] ?? 0) + n;
      return all;
    }, {}),
  };
}

/** A warm-up (discarded), then `runs` measured runs; logs each. */
export async function measure<T extends RunStats>(
  label: string,
  log: (line: string) => void,
  plan: { warmupS: number; durationS: number; runs: number },
  once: (durationS: number) => Promise<T>,
): Promise<{ median: RunStats; runs: T[] }> {
  const [measured] = await measureAlternating([{ label, once }], log, plan);
  return measured!;
}

/**
 * Several loads measured in turns: each one's warm-up (discarded), then run i of each, for i up to
 * `runs`, in the order given and reversed on every other turn (A B, B A, A B), so that a drift of
 * the machine or of the database over the scenario (a process still warming up, a table the writes
 * grow) falls on all of them alike rather than on whichever goes first. Logs each run; one result
 * per load.
 */
export async function measureAlternating<T extends RunStats>(
  loads: { label: string; once: (durationS: number) => Promise<T> }[],
  log: (line: string) => void,
  plan: { warmupS: number; durationS: number; runs: number },
): Promise<{ median: RunStats; runs: T[] }[]> {
  for (const { once } of loads) await once(plan.warmupS);
  const runs: T[][] = loads.map(() => []);
  for (let i = 0; i < plan.runs; i++) {
    const turn = [...loads.entries()];
    if (i % 2 === 1) turn.reverse();
    for (const [k, { label, once }] of turn) {
      const r = await once(plan.durationS);
      runs[k]!.push(r);
      const statuses = r.errors > 0 && r.statuses ? ` (statuses ${JSON.stringify(r.statuses)})` : '';
      const late =
        'late_p99_ms' in r && r.late_p99_ms !== null ? `, sends late against the schedule p99 ${fmt(r.late_p99_ms as number | null)} ms` : '';
      const opened = 'opened' in r ? `, ${r.opened as number} connections opened` : '';
      log(
        `  ${label} run ${i + 1}: ${r.rps.toFixed(1)}/s p50 ${fmt(r.p50_ms)} p99 ${fmt(r.p99_ms)}${r.p999_ms !== undefined ? ` p99.9 ${fmt(r.p999_ms)}` : ''} ms, errors ${r.errors}${statuses}${late}${opened}`,
      );
    }
  }
  return runs.map((measured) => ({ median: medianOf(measured), runs: measured }));
}

export const fmt = (x: number | null | undefined, digits = 2) => (x === null || x === undefined ? '-' : x.toFixed(digits));
