/** What the scenarios over the loaded dataset share: fresh servers, the load specs, the saturation load. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CompareBuild } from '../compare-build.ts';
import type { RunContext } from '../context.ts';
import type { ScenarioName } from '../options.ts';
import { Api, holdInMemory } from '../load.ts';
import { openLoopInChild } from '../open-loop.ts';
import { measure, type LoadSpec } from '../scenarios.ts';
import { startExpress, startGrantd, type Server } from '../servers.ts';

/** The loaded dataset the scenarios measure. */
export interface DatasetContext {
  databaseUrl: string;
  /** The admin key. */
  key: string;
  deepCursors: string[];
  /** The build --compare-root names, with its own database; null without it. */
  compare: CompareBuild | null;
}

/** Waits until every worker of a fresh grantd holds the tenants' grants (see holdInMemory); the time it took goes to the notes. */
async function graphLoaded(ctx: RunContext, apis: Api[]): Promise<void> {
  const seconds = await holdInMemory(
    apis.map((api) => ({ api, check: ctx.samples.mix[0]! })),
    ctx.options.workers,
    apis.length * ctx.heldPerProcess,
  );
  if (seconds === null) ctx.log('grants in memory: not loaded within 300 s; measuring anyway');
  else ctx.graphLoads.push(seconds);
}

export function noteGraphLoads({ graphLoads, note }: RunContext): void {
  const sorted = [...graphLoads].sort((a, b) => a - b);
  note(
    `grants in memory: each fresh grantd held the tenant's grants ${sorted[0]!.toFixed(1)} to ${sorted.at(-1)!.toFixed(1)} s after its first check ` +
      `(${graphLoads.length} processes; waited for before the warm-up, PostgreSQL answers until then)`,
  );
}

/**
 * Runs `work` against a fresh bare Express app with as many workers as grantd, then stops it. The
 * app is served by grantd's HTTP server (src/http/server.ts), or with `servedBy` 'listen' by stock
 * `app.listen`, which costs Express more (see createHttpServer).
 */
export async function withExpress<T>(ctx: RunContext, work: (server: Server) => Promise<T>, servedBy: 'grantd' | 'listen' = 'grantd'): Promise<T> {
  const server = await startExpress(ctx.options.workers, servedBy);
  try {
    return await work(server);
  } finally {
    await server.proc.stop();
  }
}

/**
 * Runs `work` against a fresh grantd (`settings`: more of its environment; `root`: the build, by
 * default the run's snapshot) once it holds the tenant of `key` in memory, and those of `alsoHeld`
 * (keys of tenants loaded like the dataset's); with `holdsNothing` (a grantd started with
 * GRANTD_GRAPH_MEMORY=0) as soon as it is up.
 */
export async function withGrantd<T>(
  ctx: RunContext,
  databaseUrl: string,
  key: string,
  work: (api: Api, server: Server) => Promise<T>,
  {
    alsoHeld = [],
    settings = {},
    holdsNothing = false,
    root = ctx.resources.snapshot!.dir,
  }: { alsoHeld?: string[]; settings?: NodeJS.ProcessEnv; holdsNothing?: boolean; root?: string } = {},
): Promise<T> {
  const server = await startGrantd(root, databaseUrl, ctx.options.workers, settings);
  try {
    const api = new Api(server.url, key);
    if (!holdsNothing) await graphLoaded(ctx, [api, ...alsoHeld.map((other) => new Api(server.url, other))]);
    return await work(api, server);
  } finally {
    await server.proc.stop();
  }
}

export const checkSpec = ({ bodies }: RunContext): LoadSpec & { bodies: string[] } => ({
  method: 'POST',
  paths: ['/v1/check'],
  bodies: bodies.checkBodies,
  connections: 64,
});
export const bulkSpec = ({ bodies }: RunContext): LoadSpec & { bodies: string[] } => ({
  method: 'POST',
  paths: ['/v1/check/bulk'],
  bodies: bodies.bulkBodies,
  connections: 64,
});
export const objectsSpec = (paths: string[]): LoadSpec => ({ method: 'GET', paths, connections: 8, timeoutS: 60 });
export const headersFor = (api: Api) => api.headers();
/** What grantd is sent, sent to the bare Express app too (it reads none of it). */
export const grantdHeaders = (key: string) => new Api('', key).headers();
/**
 * The saturation load of POST scenarios (check, check_at_least, check_token, check_bulk_100, and their Express and
 * Cerbos peers): bench/open-loop.ts's closed loop, `spec.connections` keep-alive connections each
 * sending its next body when its answer arrives, rather than autocannon, whose header parsing costs
 * more per grantd answer than per peer answer (bench/README.md#saturation-load).
 */
export const CLOSED_LOOP = 'closed loop of 64 keep-alive connections (bench/open-loop.ts; autocannon until 2026-11-24)';
export const saturate = (
  ctx: RunContext,
  label: string,
  server: { url: string },
  headers: Record<string, string>,
  spec: LoadSpec & { bodies: string[] },
) => measure(label, ctx.log, ctx.options.plan, saturating(ctx, label, server, headers, spec));
/** One run of the saturation load, for `measure` or `measureAlternating`. */
export const saturating = (
  ctx: RunContext,
  label: string,
  server: { url: string },
  headers: Record<string, string>,
  spec: LoadSpec & { bodies: string[] },
) => {
  const bodiesFile = join(ctx.resources.workDir, `${label.replace(/\W+/g, '-')}-bodies.json`);
  writeFileSync(bodiesFile, JSON.stringify(spec.bodies));
  return (durationS: number) =>
    openLoopInChild({ url: server.url, path: spec.paths[0]!, headers, bodiesFile, connections: spec.connections, durationS });
};
/** A scenario of tenants of its own that threw: its stack in the log, its row saying it failed, and no outcome. */
export const scenarioFailed =
  (ctx: RunContext, name: ScenarioName, log: (line: string) => void) =>
  (error: unknown): null => {
    log(`${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    ctx.record(name, null, `failed: ${firstLine(error)}`);
    return null;
  };

export const firstLine = (error: unknown, lines = 1) =>
  error instanceof Error ? error.message.split('\n').slice(0, lines).join(' | ') : String(error);
export const ratio = (a: number | null | undefined, b: number | null | undefined) => (a && b ? a / b : null);
