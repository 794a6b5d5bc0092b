import type { Command } from 'commander';
import { KEY_SCOPES, type KeyScope } from '../../contract/index.ts';
import { API_ENVIRONMENT, apiClient, commaList, printJson, printTable } from './api.ts';
import { printSecretOnce } from './tenant.ts';

/** `grantd keys list|create|revoke`: /v1/keys, with an admin key of the tenant. */
export function registerKeys(program: Command): void {
  const keys = program
    .command('keys')
    .description("list, create and revoke the tenant's API keys (an admin key)")
    .addHelpText('after', API_ENVIRONMENT);

  keys
    .command('list')
    .description('list the live keys, oldest first: prefixes, never secrets (scope admin)')
    .option('--json', 'print {"keys": [...]} as the API answers it')
    .addHelpText('after', API_ENVIRONMENT)
    .action(async (options: { json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'admin');
      const list = await client.keys.list();
      if (options.json) return printJson(list);
      printTable(
        ['ID', 'PREFIX', 'SCOPES', 'LABEL', 'CREATED', 'LAST USED'],
        list.keys.map((k) => [k.id, k.prefix, k.scopes.join(','), k.label || '-', k.created_at, k.last_used_at ?? 'never']),
      );
    });

  keys
    .command('create')
    .description('create a key and print its secret, once (scope admin)')
    .option('--scopes <scopes>', `comma-separated, of ${KEY_SCOPES.join(', ')}`, commaList, ['check:read'])
    .option('--label <text>', 'a name for people', '')
    .option('--json', 'print the key as the API answers it, secret and revision included')
    .addHelpText('after', `${API_ENVIRONMENT}\nExample:\n  grantd keys create --scopes grant:read,grant:write --label deploy\n`)
    .action(async (options: { scopes: string[]; label: string; json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'admin');
      // The server refuses an unknown scope with a problem naming it.
      const key = await client.keys.create({ scopes: options.scopes as KeyScope[], label: options.label });
      if (options.json) return printJson(key);
      printSecretOnce(`API key ${key.id} (${key.scopes.join(', ')})`, key.secret, (text) => process.stdout.write(text));
    });

  keys
    .command('revoke')
    .description('revoke a key: it stops working at once (scope admin)')
    .argument('<id>', 'the key id, key_...')
    .option('--json', 'print {"revoked": "<id>"}')
    .addHelpText('after', API_ENVIRONMENT)
    .action(async (id: string, options: { json?: boolean }, command: Command) => {
      const { client } = apiClient(command, 'admin');
      await client.keys.revoke(id);
      if (options.json) return printJson({ revoked: id });
      process.stdout.write(`revoked ${id}\n`);
    });
}
