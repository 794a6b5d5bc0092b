/** What a run holds outside itself (grantd's snapshot, a database, a work directory, switched-off triggers) and its release. */
import { rmSync } from 'node:fs';
import type { RunContext } from './context.ts';
import { children, createDatabase, dropDatabase, ensureBuilt, killHard, snapshotGrantd, switchTriggers } from './servers.ts';

/** Builds grantd if its build is stale and copies it aside, so that the scenarios run the same code throughout. */
export function buildAndSnapshot({ log, results, resources }: RunContext): void {
  const buildNote = ensureBuilt(log);
  if (buildNote) results.notes.push(buildNote);
  resources.snapshot = snapshotGrantd();
  results.grantdVersion = resources.snapshot.version;
}

/** A database of the run's own, dropped by cleanup(); its URL. */
export async function createBenchDatabase({ log, resources }: RunContext): Promise<string> {
  const database = await createDatabase();
  resources.databaseName = database.name;
  log(`created database ${database.name}`);
  return database.url;
}

export async function switchFeedBackOn({ resources }: RunContext): Promise<void> {
  if (!resources.feedSwitchedOff) return;
  const { url, triggers } = resources.feedSwitchedOff;
  await switchTriggers(url, triggers, true);
  resources.feedSwitchedOff = null;
}

export async function cleanup(ctx: RunContext): Promise<void> {
  const { log, resources } = ctx;
  for (const child of children) killHard(child);
  await switchFeedBackOn(ctx).catch((error: unknown) => log(`could not switch the changes feed's triggers on again: ${String(error)}`));
  const names = [resources.databaseName, resources.compareDatabaseName].filter((name) => name !== null);
  resources.databaseName = resources.compareDatabaseName = null;
  for (const name of names) {
    await dropDatabase(name).catch((error: unknown) => log(`could not drop database ${name}: ${String(error)}`));
    log(`dropped database ${name}`);
  }
  rmSync(resources.workDir, { recursive: true, force: true });
  resources.snapshot?.remove();
}

/** On Ctrl-C or SIGTERM: cleanup(), then exit 130. */
export function cleanUpOnSignals(ctx: RunContext): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      ctx.log(`${signal}: cleaning up`);
      void cleanup(ctx).finally(() => process.exit(130));
    });
  }
}
