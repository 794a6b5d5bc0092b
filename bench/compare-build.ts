/**
 * --compare-root DIR: another checkout's grantd (the code before a change, built there) measured in
 * the same run as this one (bench/README.md#two-builds-in-one-run). It migrates and loads a database
 * of its own, since a build does not know the migrations that came after it; its answers to the
 * labelled mix and the listings are compared with the model, as this build's are.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { modelMismatches } from './compare.ts';
import type { RunContext } from './context.ts';
import { Api, loadGrantd } from './load.ts';
import { collectAnswers } from './load-dataset.ts';
import { withGrantd, type DatasetContext } from './scenarios/shared.ts';
import type { ComparedScenario } from './options.ts';
import type { RunStats } from './scenarios.ts';
import { buildVersion, createDatabase, startGrantd, vacuumDatabase } from './servers.ts';

/** The other build: where it is built, its database and that database's admin key. */
export interface CompareBuild {
  root: string;
  databaseUrl: string;
  key: string;
}

/** Migrates and loads the other build's database through that build, as loadDataset does for this one; checks its answers. */
export async function loadCompareBuild(ctx: RunContext, root: string): Promise<CompareBuild> {
  const { ds, log, note, resources } = ctx;
  if (!existsSync(join(root, 'dist', 'src', 'cli', 'main.js')))
    throw new Error(`--compare-root ${root}: no build there (run npm run build in it; bench/README.md#two-builds-in-one-run)`);
  const database = await createDatabase('_compare');
  resources.compareDatabaseName = database.name;
  const version = buildVersion(root);
  log(`loading the build of ${root} (${version}) into database ${database.name}`);
  const first = await startGrantd(root, database.url, ctx.options.workers);
  if (!first.adminKey) throw new Error(`the grantd of ${root} printed no admin key:\n${first.proc.output()}`);
  try {
    const api = new Api(first.url, first.adminKey);
    const loaded = await loadGrantd(api, ds, log);
    note(`compared build ${root} (${version}): its own database, loaded the same way in ${loaded.seconds.toFixed(1)} s`);
    await vacuumDatabase(database.url);
    const found = modelMismatches(ctx, 'compared build', await collectAnswers(ctx, api, []));
    const mismatches = found.check_mismatches + found.listing_mismatches + found.check_vs_bulk_mismatches;
    ctx.results.compare = { root, version, model: found, mismatches, runs: {} };
    return { root, databaseUrl: database.url, key: first.adminKey };
  } finally {
    await first.proc.stop();
  }
}

/** Runs `work` against a fresh grantd of the other build holding its tenant, or against null when there is none. */
export const withCompareBuild = <T>(ctx: RunContext, { compare }: DatasetContext, work: (other: Api | null) => Promise<T>): Promise<T> =>
  compare ? withGrantd(ctx, compare.databaseUrl, compare.key, work, { root: compare.root }) : work(null);

/** The other build's load in a compared scenario, to alternate with this build's (measureAlternating); none without it. */
export function compareLoad<T extends RunStats>(
  name: ComparedScenario,
  other: Api | null,
  load: (api: Api, label: string) => (durationS: number) => Promise<T>,
): { label: string; once: (durationS: number) => Promise<T> }[] {
  const label = `${name} compared build`;
  return other ? [{ label, once: load(other, label) }] : [];
}

/** The other build's figures in scenario `name`, when it was measured. */
export function recordCompared({ results }: RunContext, name: ComparedScenario, measured: { median: RunStats } | undefined): void {
  if (results.compare && measured) results.compare.runs[name] = measured.median;
}
