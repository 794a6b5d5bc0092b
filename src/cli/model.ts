import { ProblemError, ServiceError, type GrantdClient, type Namespace } from '../client/index.ts';
import type { RelationDefinitions } from '../engine/schema.ts';
import { formatNamespaces, isBuiltin, loadModelFile, ModelFileError, sameDefinition } from './model-file.ts';
import { testModelFile } from './model-test.ts';

/** Exit codes of the model commands: 1 a failed assertion or a change the server refused, 2 a file or a command that cannot be used. */
const EXIT = { ok: 0, failed: 1, unusable: 2 } as const;

const describeError = (error: unknown): string =>
  error instanceof ServiceError ? `${error.type}: ${error.detail}` : error instanceof Error ? error.message : String(error);

/** One change `schema apply` makes to the tenant's namespaces. */
interface Change {
  verb: 'create' | 'update' | 'delete';
  name: string;
  relations: RelationDefinitions | null;
}

/**
 * The changes that make the tenant's namespaces those of the file: updates first, then deletes
 * (with `prune`), then creates. Only updates and deletes can be refused for grants in use, so a
 * refusal stops the apply before anything is created.
 */
function plan(file: Record<string, { relations?: RelationDefinitions | undefined }>, held: readonly Namespace[], prune: boolean): Change[] {
  const heldByName = new Map(held.map((ns) => [ns.name, ns]));
  const wanted = Object.entries(file)
    .filter(([name]) => !isBuiltin(name))
    .map(([name, ns]) => ({ name, relations: ns.relations ?? null }));
  const updates = wanted.filter((ns) => heldByName.has(ns.name) && !sameDefinition(heldByName.get(ns.name)!.relations, ns.relations));
  const deletes = prune ? held.filter((ns) => !isBuiltin(ns.name) && !(ns.name in file)).map((ns) => ({ name: ns.name, relations: null })) : [];
  const creates = wanted.filter((ns) => !heldByName.has(ns.name));
  return [
    ...updates.map((c) => ({ verb: 'update' as const, ...c })),
    ...deletes.map((c) => ({ verb: 'delete' as const, ...c })),
    ...creates.map((c) => ({ verb: 'create' as const, ...c })),
  ];
}

async function applyChange(client: GrantdClient, change: Change): Promise<void> {
  const definition = change.relations === null ? {} : { relations: change.relations };
  if (change.verb === 'create') await client.namespaces.create({ name: change.name, ...definition });
  else if (change.verb === 'update') await client.namespaces.update(change.name, definition);
  else await client.namespaces.delete(change.name);
}

const PAST = { create: 'created', update: 'updated', delete: 'deleted' } as const;

/** `grantd schema apply <file> [--prune]`: makes the tenant's namespaces those of the file, through the API, printing each change. */
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
      const rest = changes.length - i - 1;
      const why = error instanceof ProblemError ? 'the server refused' : 'no answer from the server, so it may or may not have been made:';
      return fail(
        `grantd schema apply: ${why} to ${change.verb} namespace ${change.name} (${describeError(error)}); ` +
          `${i} change${i === 1 ? ' was' : 's were'} made before it, ${rest} not tried. Rerunning after a fix is safe.`,
        EXIT.failed,
      );
    }
    process.stdout.write(`${PAST[change.verb]} namespace ${change.name}\n`);
  }
  const unchanged = Object.keys(file.namespaces).filter((name) => !isBuiltin(name)).length - changes.filter((c) => c.verb !== 'delete').length;
  process.stdout.write(
    changes.length === 0 ? `no changes: the namespaces are as in ${path}\n` : `${changes.length} changed, ${unchanged} already as in ${path}\n`,
  );
  return EXIT.ok;
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
