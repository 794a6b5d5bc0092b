import { ProblemError, ServiceError, type GrantdClient, type Namespace } from '../client/index.ts';
import type { RelationDefinitions } from '../engine/schema.ts';
import { formatNamespaces, isBuiltin, loadModelFile, ModelFileError, sameDefinition } from './model-file.ts';
import { testModelFile } from './model-test.ts';

/** Exit codes of the model commands: 1 a failed assertion or a change the server refused, 2 a file or a command that cannot be used. */
const EXIT = { ok: 0, failed: 1, unusable: 2 } as const;

const describeError = (error: unknown): string =>
  error instanceof ServiceError ? `${error.title} (${error.type}): ${error.detail}` : error instanceof Error ? error.message : String(error);

/** One change `schema apply` makes to the tenant's namespaces, with the definition it replaces (update, delete). */
interface Change {
  verb: 'create' | 'update' | 'delete';
  name: string;
  relations: RelationDefinitions | null;
  previous: RelationDefinitions | null;
}

/**
 * The changes that make the tenant's namespaces those of the file: updates first, then deletes
 * (with `prune`), then creates. Updates and deletes are the changes the server refuses for grants
 * in use, so most refusals come before anything is created.
 */
function plan(file: Record<string, { relations?: RelationDefinitions | undefined }>, held: readonly Namespace[], prune: boolean): Change[] {
  const heldByName = new Map(held.map((ns) => [ns.name, ns]));
  const wanted = Object.entries(file)
    .filter(([name]) => !isBuiltin(name))
    .map(([name, ns]) => ({ name, relations: ns.relations ?? null }));
  const updates = wanted
    .filter((ns) => heldByName.has(ns.name) && !sameDefinition(heldByName.get(ns.name)!.relations, ns.relations))
    .map((ns) => ({ verb: 'update' as const, ...ns, previous: heldByName.get(ns.name)!.relations }));
  const deletes = prune
    ? held
        .filter((ns) => !isBuiltin(ns.name) && !(ns.name in file))
        .map((ns) => ({ verb: 'delete' as const, name: ns.name, relations: null, previous: ns.relations }))
    : [];
  const creates = wanted.filter((ns) => !heldByName.has(ns.name)).map((ns) => ({ verb: 'create' as const, ...ns, previous: null }));
  return [...updates, ...deletes, ...creates];
}

const definitionOf = (relations: RelationDefinitions | null) => (relations === null ? {} : { relations });

async function applyChange(client: GrantdClient, change: Change): Promise<void> {
  if (change.verb === 'create') await client.namespaces.create({ name: change.name, ...definitionOf(change.relations) });
  else if (change.verb === 'update') await client.namespaces.update(change.name, definitionOf(change.relations));
  else await client.namespaces.delete(change.name);
}

/** Takes a change back: the previous definition put again, a deleted namespace created again, a created one deleted. */
async function undoChange(client: GrantdClient, change: Change): Promise<string> {
  if (change.verb === 'create') await client.namespaces.delete(change.name);
  else if (change.verb === 'update') await client.namespaces.update(change.name, definitionOf(change.previous));
  else await client.namespaces.create({ name: change.name, ...definitionOf(change.previous) });
  return `${UNDONE[change.verb]} namespace ${change.name}`;
}

const PAST = { create: 'created', update: 'updated', delete: 'deleted' } as const;
const UNDONE = { create: 'deleted again', update: 'restored', delete: 'created again' } as const;

/**
 * `grantd schema apply <file> [--prune]`: makes the tenant's namespaces those of the file, through the
 * API, printing each change. The file is checked whole first (as the server checks a namespace);
 * if the server still refuses a change (grants in use, a concurrent change), the changes this run
 * made are undone, latest first, so that nothing is left half-applied (docs/model.md#model-files).
 */
export async function schemaApplyCommand(client: GrantdClient, path: string, prune: boolean): Promise<number> {
  let file;
  try {
    file = (await loadModelFile(path)).model;
  } catch (error) {
    if (error instanceof ModelFileError) return fail(`grantd schema apply: nothing was changed:\n${error.message}`, EXIT.unusable);
    throw error;
  }
  let held: Namespace[];
  try {
    held = (await client.namespaces.list()).namespaces;
  } catch (error) {
    return fail(`grantd schema apply: nothing was changed: cannot list the namespaces (${describeError(error)})`, EXIT.failed);
  }
  const changes = plan(file.namespaces, held, prune);
  for (const [i, change] of changes.entries()) {
    try {
      await applyChange(client, change);
    } catch (error) {
      const refused = error instanceof ProblemError;
      const what = refused
        ? `the server refused to ${change.verb} namespace ${change.name}: ${describeError(error)}`
        : `no answer from the server to ${change.verb} namespace ${change.name}, so it may or may not have been made (${describeError(error)})`;
      return fail(`grantd schema apply: ${what}\n${await undo(client, changes.slice(0, i))}`, EXIT.failed);
    }
    process.stdout.write(`${PAST[change.verb]} namespace ${change.name}\n`);
  }
  const unchanged = Object.keys(file.namespaces).filter((name) => !isBuiltin(name)).length - changes.filter((c) => c.verb !== 'delete').length;
  process.stdout.write(
    changes.length === 0 ? `no changes: the namespaces are as in ${path}\n` : `${changes.length} changed, ${unchanged} already as in ${path}\n`,
  );
  return EXIT.ok;
}

/** Undoes the changes made, latest first, printing each; says what the tenant's namespaces are left as. */
async function undo(client: GrantdClient, made: readonly Change[]): Promise<string> {
  if (made.length === 0) return 'Nothing was changed.';
  const left: string[] = [];
  for (const change of [...made].reverse()) {
    try {
      process.stdout.write(`${await undoChange(client, change)}\n`);
    } catch (error) {
      left.push(`${PAST[change.verb]} namespace ${change.name} (undoing it failed: ${describeError(error)})`);
    }
  }
  const count = `${made.length} change${made.length === 1 ? '' : 's'}`;
  return left.length === 0
    ? `The ${count} made before it ${made.length === 1 ? 'was' : 'were'} undone: the namespaces are as they were before.`
    : `Of the ${count} made before it, ${left.length} could not be undone and ${left.length === 1 ? 'stays' : 'stay'}: ${left.join('; ')}.`;
}

/** `grantd schema export [--json]`: the tenant's namespaces, in the model file's format. */
export async function schemaExportCommand(client: GrantdClient, json: boolean): Promise<number> {
  try {
    const { namespaces } = await client.namespaces.list();
    process.stdout.write(formatNamespaces(namespaces, json));
    return EXIT.ok;
  } catch (error) {
    return fail(`grantd schema export: cannot list the namespaces (${describeError(error)})`, EXIT.failed);
  }
}

/** `grantd test <file>`: the file's assertions against grantd's engine in this process; a line per failure, then a summary. */
export async function testCommand(path: string): Promise<number> {
  let report;
  try {
    report = await testModelFile(path);
  } catch (error) {
    if (error instanceof ModelFileError) return fail(`grantd test: ${path} cannot be tested:\n${error.message}`, EXIT.unusable);
    throw error;
  }
  for (const failure of report.failures) process.stdout.write(`FAIL ${failure.where}: ${failure.message}\n`);
  const passed = report.assertions - report.failures.length;
  process.stdout.write(`${report.assertions} assertions: ${passed} passed, ${report.failures.length} failed\n`);
  return report.failures.length > 0 ? EXIT.failed : EXIT.ok;
}

function fail(message: string, code: number): number {
  process.stderr.write(`${message}\n`);
  return code;
}
