import type { Command } from 'commander';
import type { Namespace } from '../client/index.ts';
import { REFERENCE_LISTS } from '../engine/definition-checks.ts';
import { API_ENVIRONMENT, apiClient, printJson, printTable } from './api.ts';

/** A namespace's relations on one line: `owner, viewer (includes owner; excludes blocked)`, or `open` for an open namespace. */
function relationsLine(ns: Namespace): string {
  if (ns.relations === null) return 'open (any relation)';
  const names = Object.entries(ns.relations).map(([name, def]) => {
    const lists = REFERENCE_LISTS.filter((list) => def[list]?.length).map((list) => `${list} ${def[list]!.join(', ')}`);
    return lists.length > 0 ? `${name} (${lists.join('; ')})` : name;
  });
  return names.length > 0 ? names.join(', ') : '(no relation)';
}

/** `grantd namespaces list|get`: GET /v1/namespaces and GET /v1/namespaces/{name}. */
export function registerNamespaces(program: Command): void {
  const namespaces = program.command('namespaces').description("list and show the tenant's namespaces").addHelpText('after', API_ENVIRONMENT);

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
          (found.relations === null ? 'open: any relation, nothing inherited\n' : `relations:\n${JSON.stringify(found.relations, null, 2)}\n`),
      );
    });
}
