import type { Command } from 'commander';
import type { Agent } from '../client/index.ts';
import { API_ENVIRONMENT, apiClient, commaList, positiveInteger, printJson, printTable } from './api.ts';

interface CreateOptions {
  scope: string[];
  displayName?: string;
  owner?: string;
  json?: boolean;
}

/** `grantd agents list|create|delete`: /v1/agents. */
export function registerAgents(program: Command): void {
  const agents = program.command('agents').description('list, register and remove agents').addHelpText('after', API_ENVIRONMENT);

  agents
    .command('list')
    .description('list the registered agents, by external id (scope grant:read)')
    .option('--limit <n>', 'print at most n agents', positiveInteger, 100)
    .option('--all', 'print every agent (all pages)')
    .option('--json', 'print {"agents": [...], "more": true|false}')
    .addHelpText('after', API_ENVIRONMENT)
    .action(async (options: { limit: number; all?: boolean; json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'grant:read');
      const wanted = options.all ? Infinity : options.limit;
      const found: Agent[] = [];
      let more = false;
      for await (const agent of client.agents.iterate({ limit: Math.min(wanted, 1000) })) {
        if (found.length === wanted) {
          more = true;
          break;
        }
        found.push(agent);
      }
      if (options.json) return printJson({ agents: found, more });
      printTable(
        ['SUBJECT', 'SCOPE', 'OWNER', 'NAME', 'CREATED'],
        found.map((a) => [a.subject, a.scope.join(',') || '(nothing)', a.owner ?? '-', a.display_name ?? '-', a.created_at]),
      );
      if (more) process.stdout.write('(more agents: use --all, or --limit)\n');
    });

  agents
    .command('create')
    .description('register an agent: reserves the subject agent:<external_id> (scope grant:write)')
    .argument('<external_id>', "the agent's own id")
    .requiredOption('--scope <entries>', 'comma-separated <namespace>:<relation> entries it may use, * for any side, e.g. document:viewer', commaList)
    .option('--display-name <text>', 'a name for people')
    .option('--owner <subject>', 'the user it acts for, user:<id>')
    .option('--json', 'print the agent as the API answers it, with the revision that includes it')
    .addHelpText('after', `${API_ENVIRONMENT}\nExample:\n  grantd agents create summariser --scope document:viewer --owner user:alice\n`)
    .action(async (externalId: string, options: CreateOptions, command: Command) => {
      const { client } = apiClient(command, 'grant:write');
      const agent = await client.agents.create({
        external_id: externalId,
        scope: options.scope,
        ...(options.displayName !== undefined ? { display_name: options.displayName } : {}),
        ...(options.owner !== undefined ? { owner: options.owner } : {}),
      });
      if (options.json) return printJson(agent);
      process.stdout.write(`registered ${agent.subject}, scope ${agent.scope.join(',') || '(nothing)'}\n`);
    });

  agents
    .command('delete')
    .description('the killswitch: removes the agent and every grant that names it, at once (scope grant:write)')
    .argument('<external_id>', "the agent's own id")
    .option('--json', 'print {"external_id", "grants_removed", "clients_removed", "revision"} as the API answers it')
    .addHelpText('after', API_ENVIRONMENT)
    .action(async (externalId: string, options: { json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'grant:write');
      const removed = await client.agents.delete(externalId);
      if (options.json) return printJson(removed);
      process.stdout.write(
        `removed agent:${removed.external_id}, ${removed.grants_removed} grants and ${removed.clients_removed} OAuth clients naming it\n`,
      );
    });
}
