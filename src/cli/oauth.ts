import { Option, type Command } from 'commander';
import { CLIENT_TYPES, KEY_SCOPES, type KeyScope } from '../../contract/index.ts';
import type { OAuthClientInput } from '../client/index.ts';
import { API_ENVIRONMENT, apiClient, commaList, printJson, printTable } from './api.ts';
import { printSecretOnce } from './tenant.ts';

interface CreateOptions {
  type: OAuthClientInput['type'];
  scopes: string[];
  redirectUri: string[];
  agent?: string;
  json?: boolean;
}

/** Each --redirect-uri given, in order (the option repeats). */
const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** `grantd oauth clients list|create|delete`: /v1/oauth/clients, with an admin key of the tenant. */
export function registerOAuth(program: Command): void {
  const oauth = program.command('oauth').description("the tenant's OAuth clients (an admin key)").addHelpText('after', API_ENVIRONMENT);
  const clients = oauth
    .command('clients')
    .description("list, create and delete the tenant's OAuth clients (an admin key)")
    .addHelpText('after', API_ENVIRONMENT);

  clients
    .command('list')
    .description('list the clients, never secrets (scope admin)')
    .option('--json', 'print {"clients": [...]} as the API answers it')
    .addHelpText('after', API_ENVIRONMENT)
    .action(async (options: { json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'admin');
      const list = await client.oauth.clients.list();
      if (options.json) return printJson(list);
      printTable(
        ['CLIENT ID', 'NAME', 'TYPE', 'SCOPES', 'AGENT', 'CREATED', 'REDIRECT URIS'],
        list.clients.map((c) => [c.client_id, c.name, c.type, c.scopes.join(','), c.agent ?? '-', c.created_at, c.redirect_uris.join(' ') || '-']),
      );
    });

  clients
    .command('create')
    .description("create a client; a confidential one's secret is printed once (scope admin)")
    .argument('<name>', 'shown on the consent page')
    .addOption(
      new Option('--type <type>', 'confidential (has a secret) or public (a browser or mobile app)').choices(CLIENT_TYPES).default('confidential'),
    )
    .option('--scopes <scopes>', `comma-separated, of ${KEY_SCOPES.join(', ')}: the most its tokens may carry`, commaList, ['check:read'])
    .option('--redirect-uri <uri>', 'where the authorization code may be sent (repeat it for more)', collect, [])
    .option('--agent <external_id>', "a registered agent's id: the client then uses client_credentials only, acting as agent:<id>")
    .option('--json', 'print the client as the API answers it, secret and revision included')
    .addHelpText(
      'after',
      `${API_ENVIRONMENT}
Examples:
  grantd oauth clients create reports --scopes check:read,grant:read
  grantd oauth clients create spa --type public --scopes check:read --redirect-uri https://app.example.com/callback
`,
    )
    .action(async (name: string, options: CreateOptions, command: Command) => {
      const { client } = apiClient(command, 'admin');
      // The server refuses an unknown scope, or a public client without a redirect URI, with a problem naming it.
      const created = await client.oauth.clients.create({
        name,
        type: options.type,
        scopes: options.scopes as KeyScope[],
        ...(options.redirectUri.length > 0 ? { redirect_uris: options.redirectUri } : {}),
        ...(options.agent !== undefined ? { agent: options.agent } : {}),
      });
      if (options.json) return printJson(created);
      process.stdout.write(`created ${created.type} OAuth client ${created.client_id} (${created.scopes.join(', ')})\n`);
      if (created.client_secret) {
        const use = 'Send it with the client id (HTTP Basic) to /v1/oauth/token';
        printSecretOnce(`Client secret of ${created.client_id}`, created.client_secret, (text) => process.stdout.write(text), use);
      }
    });

  clients
    .command('delete')
    .description('delete a client: its tokens stop working at once (scope admin)')
    .argument('<client_id>', 'the client id, oc_...')
    .option('--json', 'print {"deleted": "<client_id>"}')
    .addHelpText('after', API_ENVIRONMENT)
    .action(async (clientId: string, options: { json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'admin');
      await client.oauth.clients.delete(clientId);
      if (options.json) return printJson({ deleted: clientId });
      process.stdout.write(`deleted ${clientId}: its tokens no longer work\n`);
    });
}
