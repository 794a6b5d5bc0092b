import type { Command } from 'commander';
import type { Grant, GrantsQuery } from '../client/index.ts';
import { API_ENVIRONMENT, apiClient, printJson, printTable, positiveInteger } from './api.ts';

interface ListOptions {
  subject?: string;
  relation?: string;
  object?: string;
  namespace?: string;
  limit: number;
  all?: boolean;
  json?: boolean;
}

interface TripleOptions {
  json?: boolean;
}

const TRIPLE_ARGUMENTS = (command: Command) =>
  command
    .argument('<subject>', 'who, <namespace>:<id>, e.g. user:alice')
    .argument('<relation>', 'the relation, e.g. viewer')
    .argument('<object>', 'on what, <namespace>:<id>, e.g. document:q3');

/** The filters of `grants list` (and `export`) as GET /v1/grants's query. */
export const grantsQuery = (options: Pick<ListOptions, 'subject' | 'relation' | 'object' | 'namespace'>): GrantsQuery => ({
  ...(options.subject ? { subject: options.subject } : {}),
  ...(options.relation ? { relation: options.relation } : {}),
  ...(options.object ? { object: options.object } : {}),
  ...(options.namespace ? { namespace: options.namespace } : {}),
});

/** The filter options GET /v1/grants takes. */
export const withGrantFilters = (command: Command): Command =>
  command
    .option('--subject <subject>', 'only grants to this subject')
    .option('--relation <relation>', 'only grants of this relation')
    .option('--object <object>', 'only grants on this object')
    .option('--namespace <namespace>', "only grants on this namespace's objects");

/**
 * `grantd grants list|create|revoke`: GET, POST and DELETE /v1/grants. `create` and `revoke` are the
 * words of the API's own description, the client's methods and the console's buttons;
 * `write` and `delete` are kept as aliases of them, the names they had first.
 */
export function registerGrants(program: Command): void {
  const grants = program.command('grants').description('list, create and revoke grants').addHelpText('after', API_ENVIRONMENT);

  withGrantFilters(grants.command('list').description('list grants, in (object, relation, subject) order (scope grant:read)'))
    .option('--limit <n>', 'print at most n grants', positiveInteger, 100)
    .option('--all', 'print every matching grant (all pages)')
    .option('--json', 'print {"grants": [...], "more": true|false}')
    .addHelpText('after', `${API_ENVIRONMENT}\nExample:\n  grantd grants list --object document:q3\n`)
    .action(async (options: ListOptions, command: Command) => {
      const { client } = apiClient(command, 'grant:read');
      const wanted = options.all ? Infinity : options.limit;
      const found: Grant[] = [];
      let more = false;
      for await (const grant of client.grants.iterate({ ...grantsQuery(options), limit: Math.min(wanted, 1000) })) {
        if (found.length === wanted) {
          more = true;
          break;
        }
        found.push(grant);
      }
      if (options.json) return printJson({ grants: found, more });
      printTable(
        ['SUBJECT', 'RELATION', 'OBJECT', 'CREATED'],
        found.map((g) => [g.subject, g.relation, g.object, g.created_at]),
      );
      if (more) process.stdout.write(`(more grants match: use --all, or --limit)\n`);
    });

  TRIPLE_ARGUMENTS(
    grants
      .command('create')
      .alias('write')
      .description('create a grant; creating one that exists changes nothing (scope grant:write; write is an alias)'),
  )
    .option('--json', 'print the grant as the API answers it, with the revision that includes it')
    .addHelpText('after', `${API_ENVIRONMENT}\nExample:\n  grantd grants create user:alice viewer document:q3\n`)
    .action(async (subject: string, relation: string, object: string, options: TripleOptions, command: Command) => {
      const { client } = apiClient(command, 'grant:write');
      const grant = await client.grants.create({ subject, relation, object });
      if (options.json) printJson(grant);
      else process.stdout.write(`granted: ${grant.subject} ${grant.relation} ${grant.object} (since ${grant.created_at})\n`);
    });

  TRIPLE_ARGUMENTS(
    grants
      .command('revoke')
      .alias('delete')
      .description('revoke a grant; revoking one that does not exist is no error (scope grant:write; delete is an alias)'),
  )
    .option('--json', 'print {"revoked": {subject, relation, object}}')
    .addHelpText('after', `${API_ENVIRONMENT}\nExample:\n  grantd grants revoke user:alice viewer document:q3\n`)
    .action(async (subject: string, relation: string, object: string, options: TripleOptions, command: Command) => {
      const { client } = apiClient(command, 'grant:write');
      await client.grants.revoke({ subject, relation, object });
      if (options.json) printJson({ revoked: { subject, relation, object } });
      else process.stdout.write(`revoked (if it existed): ${subject} ${relation} ${object}\n`);
    });
}
