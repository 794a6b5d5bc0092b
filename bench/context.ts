/**
 * A run's state, one object carried from the entry point (bench/run.ts) through the load, the
 * comparisons and the scenarios to the report: the options, the dataset and what is drawn from it,
 * the results as they come, and what cleanup must release.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Dataset } from './dataset.ts';
import type { ManyTenantsOutcome } from './many-tenants.ts';
import type { NoisyOutcome } from './noisy.ts';
import type { ComparedScenario, Options, ScenarioName, WindowsScenario } from './options.ts';
import { drawSamples, loadBodies, type LoadBodies, type Samples } from './samples.ts';
import type { RunStats } from './scenarios.ts';
import type { snapshotGrantd, Trigger } from './servers.ts';
import type { SpiceResult } from './spicedb.ts';

/** A scenario's line in the table and the JSON. */
export interface Row {
  name: ScenarioName;
  rps: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  /** Where the load measured it (the open loop's scenarios). */
  p999_ms?: number | null;
  errors: number | null;
  vs_express: number | null;
  vs_cerbos: number | null;
  statuses?: Record<string, number>;
  note?: string;
}

/** What the run found: the rows, and the peers and figures the table, the targets and the JSON read. */
export interface Results {
  rows: Map<ScenarioName, Row>;
  notes: string[];
  peers: Record<string, unknown>;
  grantdVersion: string;
  express: RunStats | null;
  /** The same bulks of 100 answered by bare Express (parsed, then one constant result per check). */
  expressBulk: RunStats | null;
  readonly expressError: string | null;
  /** The same bare app on stock `app.listen`: what an Express app costs as usually served (reference only). */
  expressListen: RunStats | null;
  cerbos: RunStats | null;
  cerbosError: string | null;
  spice: SpiceResult | null;
  spiceError: string | null;
  mismatches: string[];
  spiceMismatches: number | null;
  noisy: NoisyOutcome | null;
  manyTenants: ManyTenantsOutcome | null;
  /** grant_batch_write's load without the changes feed's triggers (its peer). */
  batchWithoutFeed: RunStats | null;
  /** Tenant NO_WINDOWS_TENANT's key, and how many of its answers to the labelled mix differ from the dataset tenant's. */
  noWindows: { key: string; differing: number } | null;
  /** Each windows scenario's load on tenant NO_WINDOWS_TENANT (its peer). */
  noWindowsPeers: Partial<Record<WindowsScenario, RunStats>>;
  /** Tenant RULES_TENANT's key, and its answers to check_rules' labelled mix against the reference model (single, and single against bulk). */
  rules: { key: string; mismatches: number; bulkMismatches: number } | null;
  /** check_rules' peer: the plain check's load on the dataset's tenant, alternating on the same grantd. */
  rulesPlainPeer: RunStats | null;
  /** check_tracing_off's peer: the check's load on a grantd with tracing on. */
  tracingOnCheck: RunStats | null;
  /** What tracing off costs a check (check_tracing_off): share of the check's server CPU, in %. */
  tracingOffShare: number | null;
  /** check_fixed_rate: at most what share of its measured requests grantd's GC pauses of over 1 ms held up, in %. */
  fixedRateGcShare: number | null;
  /** check_sql's peer (the same load on a grantd holding the tenant in memory, alternating), its rate at 1,000/s, and its answers to the labelled mix against the model. */
  sql: { inMemory: RunStats; fixedRate: RunStats; mismatches: number } | null;
  /** grantd's garbage-collection pauses over 1 ms during check_fixed_rate's open loop (issue 45: none). */
  fixedRateLongPauses: number | null;
  /** check_at_least's peer: the plain check on the same grantd, alternating. */
  atLeastPlain: RunStats | null;
  /** check_token's peer: the same load authenticated by the API key on the same grantd, alternating. */
  tokenByKey: RunStats | null;
  /** objects_page_1m's peer: the first page of the same listing. */
  deepListingFirstPage: RunStats | null;
  /**
   * --compare-root: the other build (its folder and commit), how many of its answers to the labelled
   * mix and the listings disagree with the model, and its figures in each compared scenario.
   */
  compare: {
    root: string;
    version: string;
    model: Record<'check_mismatches' | 'listing_mismatches' | 'check_vs_bulk_mismatches', number>;
    mismatches: number;
    runs: Partial<Record<ComparedScenario, RunStats>>;
  } | null;
}

/** What the run holds outside itself, released by cleanup() (bench/resources.ts). */
export interface Resources {
  workDir: string;
  databaseName: string | null;
  /** The database of the build --compare-root names, loaded by that build. */
  compareDatabaseName: string | null;
  snapshot: ReturnType<typeof snapshotGrantd> | null;
  /** The changes feed's triggers while switched off (grant_batch_write's peer), for an interrupted run to switch them on again. */
  feedSwitchedOff: { url: string; triggers: Trigger[] } | null;
}

export interface RunContext {
  options: Options;
  /** When the run started (performance.now()): the log's clock and the wall time. */
  t0: number;
  /** A progress line to stderr. */
  log: (line: string) => void;
  /** A line for the notes of the report, logged too. */
  note: (line: string) => void;
  /** A scenario's row (stats null: not measured, the note says why). */
  record: (name: ScenarioName, stats: RunStats | null, note?: string) => void;
  ds: Dataset;
  samples: Samples;
  bodies: LoadBodies;
  results: Results;
  resources: Resources;
  /** Seconds each fresh grantd took, from its first check, to hold the tenant's grants in memory. */
  graphLoads: number[];
  /** Grants and agents one grantd process holds once it has loaded the tenant (known after the load). */
  heldPerProcess: number;
}

/** The context of a run with these options: the dataset drawn from, nothing measured yet, a work directory made. */
export function createContext(options: Options): RunContext {
  const { args, size, seed, selected, needsDataset } = options;
  const t0 = performance.now();
  const log = (line: string) => process.stderr.write(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${line}\n`);
  const rows = new Map<ScenarioName, Row>();
  const notes: string[] = [];
  const ds = new Dataset(size, seed);
  const samples = drawSamples(ds, size, seed, log);
  const bodies = loadBodies(ds, seed);
  return {
    options,
    t0,
    log,
    note: (line) => {
      notes.push(line);
      log(`note: ${line}`);
    },
    record: (name, stats, note) => {
      const { rps = null, p50_ms = null, p95_ms = null, p99_ms = null, errors = null } = stats ?? {};
      const statuses = stats?.statuses && stats.errors > 0 ? { statuses: stats.statuses } : {};
      const p999 = stats?.p999_ms !== undefined ? { p999_ms: stats.p999_ms } : {};
      rows.set(name, {
        name,
        rps,
        p50_ms,
        p95_ms,
        p99_ms,
        ...p999,
        errors,
        vs_express: null,
        vs_cerbos: null,
        ...statuses,
        ...(note ? { note } : {}),
      });
    },
    ds,
    samples,
    bodies,
    results: {
      rows,
      notes,
      peers: {},
      grantdVersion: 'unknown',
      express: null,
      expressBulk: null,
      expressError: selected.has('check') ? null : 'not run (--only)',
      expressListen: null,
      cerbos: null,
      cerbosError: args['no-cerbos'] ? 'disabled by --no-cerbos' : selected.has('check') ? null : 'not run (--only)',
      spice: null,
      spiceError: args['no-spicedb'] ? 'disabled by --no-spicedb' : needsDataset ? null : 'not run (--only)',
      mismatches: [],
      spiceMismatches: null,
      noisy: null,
      manyTenants: null,
      batchWithoutFeed: null,
      noWindows: null,
      noWindowsPeers: {},
      rules: null,
      rulesPlainPeer: null,
      tracingOnCheck: null,
      tracingOffShare: null,
      fixedRateGcShare: null,
      sql: null,
      fixedRateLongPauses: null,
      atLeastPlain: null,
      tokenByKey: null,
      deepListingFirstPage: null,
      compare: null,
    },
    resources: {
      workDir: mkdtempSync(join(tmpdir(), 'grantd-bench-')),
      databaseName: null,
      compareDatabaseName: null,
      snapshot: null,
      feedSwitchedOff: null,
    },
    graphLoads: [],
    heldPerProcess: 0,
  };
}
