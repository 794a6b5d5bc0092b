import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Namespace, NamespaceInput } from '../client/index.ts';
import { REFERENCE_LISTS, relationsByName } from '../engine/definition-checks.ts';
import { API_ENVIRONMENT, apiClient, commandName, printJson, printTable } from './api.ts';
import { CliError } from './errors.ts';

/** A namespace's relations on one line: `owner, viewer (includes owner; excludes blocked)`, or `open` for an open namespace. */
function relationsLine(ns: Namespace): string {
  if (ns.relations === null) return 'open (any relation)';
  const names = relationsByName(ns.relations).map(([name, def]) => {
    const lists = REFERENCE_LISTS.filter((list) => def[list]?.length).map((list) => `${list} ${def[list]!.join(', ')}`);
    return lists.length > 0 ? `${name} (${lists.join('; ')})` : name;
  });
  return names.length > 0 ? names.join(', ') : '(no relation)';
}

/**
 * The relations `namespaces create` is given, as JSON: its argument, or the file `--file` names (`-`:
 * standard input); neither: none, an open namespace. JSON that does not parse is a usage error saying
 * where; what parses is the server's to judge.
 */
function relationsOf(command: Command, given: string | undefined, file: string | undefined): NamespaceInput['relations'] {
  const name = `grantd ${commandName(command)}`;
  if (given !== undefined && file !== undefined) throw new CliError(`${name}: give the relations or --file, not both`, 2);
  if (file !== undefined) return parseRelations(name, readText(name, file), `in ${file}`);
  return given === undefined ? undefined : parseRelations(name, given, 'argument');
}

function readText(name: string, file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    throw new CliError(`${name}: cannot read ${file}: ${(error as Error).message}`, 2);
  }
}

function parseRelations(name: string, text: string, where: string): NamespaceInput['relations'] {
  try {
    return JSON.parse(text) as NamespaceInput['relations'];
  } catch (error) {
    throw new CliError(`${name}: the relations ${where} are not JSON: ${(error as Error).message}`, 2);
  }
}

/** `grantd namespaces list|get|create`: GET and POST /v1/namespaces, GET /v1/namespaces/{name}. */
export function registerNamespaces(program: Command): void {
  const namespaces = program.command('namespaces').description("list, show and create the tenant's namespaces").addHelpText('after', API_ENVIRONMENT);

  namespaces
    .command('list')
    .description('list the namespaces, user and agent included (scope grant:read)')
    .option('--json', 'print {"namespaces": [...]} as the API answers it')
    .addHelpText('after', API_ENVIRONMENT)
    .action(async (options: { json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'grant:read');
      const list = await client.namespaces.list();
      if (options.json) return printJson(list);
      printTable(
        ['NAME', 'RELATIONS', 'CREATED'],
        list.namespaces.map((ns) => [ns.name, relationsLine(ns), ns.created_at]),
      );
    });

  namespaces
    .command('get')
    .description('show one namespace and its definition (scope grant:read)')
    .argument('<name>', 'the namespace, e.g. document')
    .option('--json', 'print the namespace as the API answers it')
    .addHelpText('after', API_ENVIRONMENT)
    .action(async (name: string, options: { json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'grant:read');
      const found = await client.namespaces.get(name);
      if (options.json) return printJson(found);
      process.stdout.write(
        `namespace ${found.name}, created ${found.created_at}\n` +
          (found.relations === null
            ? 'open: any relation, nothing inherited\n'
            : `relations:\n${JSON.stringify(Object.fromEntries(relationsByName(found.relations)), null, 2)}\n`),
      );
    });

  namespaces
    .command('create')
    .description('create a namespace with its relations; without them, an open one (any relation) (scope grant:write)')
    .argument('<name>', 'the namespace, e.g. document')
    .argument('[relations]', 'its relations as JSON, e.g. \'{"owner": {}, "viewer": {"includes": ["owner"]}}\'')
    .option('--file <path>', 'read the relations as JSON from a file instead (- for standard input)')
    .option('--json', 'print the namespace as the API answers it, with the revision that includes it')
    .addHelpText(
      'after',
      `${API_ENVIRONMENT}
Each relation may list what it includes, requires and excludes (docs/model.md tells each).
Examples:
  grantd namespaces create document '{"owner": {}, "viewer": {"includes": ["owner", "parent->viewer"]}, "parent": {}}'
  grantd namespaces create folder --file folder-relations.json
`,
    )
    .action(async (name: string, given: string | undefined, options: { file?: string; json?: boolean }, command: Command) => {
      const relations = relationsOf(command, given, options.file);
      const { client } = apiClient(command, 'grant:write');
      const created = await client.namespaces.create({ name, ...(relations === undefined ? {} : { relations }) });
      if (options.json) return printJson(created);
      process.stdout.write(`created namespace ${created.name}: ${relationsLine(created)}\n`);
    });
}
