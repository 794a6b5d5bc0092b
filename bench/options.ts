/** The benchmark's command line (bench/README.md), checked, and what follows from it. */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { SizeName } from './dataset.ts';

/** The scenarios, in the order they run and are reported. */
export const SCENARIOS = [
  'check',
  'check_at_least',
  'check_token',
  'check_fixed_rate',
  'check_sql',
  'check_bulk_100',
  'check_windows',
  'check_bulk_windows',
  'check_rules',
  'check_tracing_off',
  'objects_first_page',
  'subjects_first_page',
  'objects_walk',
  'objects_page_1m',
  'grant_batch_write',
  'noisy_neighbour',
  'many_tenants',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];
/** The scenarios measured against tenant NO_WINDOWS_TENANT (issue 22). */
export const WINDOWS_SCENARIOS = ['check_windows', 'check_bulk_windows'] as const;
export type WindowsScenario = (typeof WINDOWS_SCENARIOS)[number];
/** The scenarios that --compare-root measures on both builds (bench/README.md#two-builds-in-one-run). */
export const COMPARED_SCENARIOS = ['check', 'check_bulk_100', 'objects_first_page', 'subjects_first_page', 'objects_walk'] as const;
export type ComparedScenario = (typeof COMPARED_SCENARIOS)[number];
const isScenario = (name: string): name is ScenarioName => (SCENARIOS as readonly string[]).includes(name);

export type Options = ReturnType<typeof parseOptions>;

export function parseOptions() {
  const { values: args } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      dataset: { type: 'string' },
      out: { type: 'string', default: 'bench-results.json' },
      seed: { type: 'string', default: '42' },
      'no-spicedb': { type: 'boolean', default: false },
      'no-cerbos': { type: 'boolean', default: false },
      'spicedb-procs': { type: 'string' },
      workers: { type: 'string', default: 'auto' },
      only: { type: 'string' },
      'compare-root': { type: 'string' },
      'noisy-each': { type: 'boolean', default: false },
    },
  });
  // --quick is dataset S's short runs: a larger dataset asked with it would silently be S.
  if (args.quick && args.dataset && args.dataset.toUpperCase() !== 'S')
    throw new Error('--quick runs dataset S only; leave out --quick to run --dataset L');
  const size = (args.dataset ?? 'S').toUpperCase() as SizeName;
  if (size !== 'S' && size !== 'L') throw new Error('--dataset must be S or L');
  /** grantd's GRANTD_WORKERS, and as many bare Express processes: both use the machine's cores as deployed (Cerbos does by itself). */
  const workers = args.workers === 'auto' ? availableParallelism() : Number(args.workers);
  if (!Number.isInteger(workers) || workers < 1) throw new Error('--workers must be auto or a positive integer');
  /** --only a,b: the scenarios to run (the load and the comparisons run whenever one needs the dataset); all by default. */
  const selected = new Set<ScenarioName>(
    args.only?.split(',').map((name) => {
      if (!isScenario(name)) throw new Error(`--only: no scenario ${name} (scenarios: ${SCENARIOS.join(', ')})`);
      return name;
    }) ?? SCENARIOS,
  );
  return {
    args,
    size,
    seed: Number(args.seed),
    workers,
    plan: args.quick ? { warmupS: 2, durationS: 5, runs: 3 } : { warmupS: 5, durationS: 20, runs: 3 },
    selected,
    /** Whether the dataset is loaded: noisy_neighbour and many_tenants load tenants of their own. */
    needsDataset: SCENARIOS.some((name) => selected.has(name) && name !== 'noisy_neighbour' && name !== 'many_tenants'),
    /** Whether tenant NO_WINDOWS_TENANT is loaded beside the dataset's. */
    needsNoWindows: WINDOWS_SCENARIOS.some((name) => selected.has(name)),
    /** Whether tenant RULES_TENANT is loaded beside the dataset's. */
    needsRules: selected.has('check_rules'),
    /** Another checkout's grantd (built there), measured beside this one in COMPARED_SCENARIOS; null without --compare-root. */
    compareRoot: args['compare-root'] ? resolve(args['compare-root']) : null,
    /** noisy_neighbour also measures B under each of A's workloads by itself (which of them costs B its p99). */
    noisyEach: args['noisy-each'],
  };
}
