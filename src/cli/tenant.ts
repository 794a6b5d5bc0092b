import type { Command } from 'commander';
import { KEY_SCOPES, KeyScopeSchema } from '../../contract/index.ts';
import { loadConfig } from '../config.ts';
import type { CreatedTenant } from '../store/tenants.ts';
import { commaList, printJson, printTable } from './api.ts';
import { CliError } from './errors.ts';

/** The database's modules, loaded when a command needs them: the API commands start without them. */
const databaseModules = async () => {
  const [{ withDatabase }, tenants, { createKey }, { createdKeyBody }] = await Promise.all([
    import('./database.ts'),
    import('../store/tenants.ts'),
    import('../store/keys.ts'),
    import('../http/bodies.ts'),
  ]);
  return { withDatabase, ...tenants, createKey, createdKeyBody };
};

/** What the commands that work on the database rather than through the API read. */
const DATABASE_ENVIRONMENT = `
Environment:
  DATABASE_URL   the database of grantd, postgres://... (default: the embedded one under GRANTD_DATA_DIR)
`;

/** The JSON docs/api.md#tenants gives for `grantd tenant create --json`, and `key create --json`. */
const tenantJson = async ({ tenant, key }: CreatedTenant) => ({
  tenant: { id: tenant.id, name: tenant.name },
  key: (await databaseModules()).createdKeyBody(key),
});

/** A secret, framed so that it is not missed, with the warning that it is shown this once and how it is used. */
export function printSecretOnce(what: string, secret: string, write: (text: string) => void, use = 'Use it as: Authorization: Bearer <key>'): void {
  write(
    [
      '',
      '================================================================================',
      ` ${what}, shown ONCE:`,
      '',
      `   ${secret}`,
      '',
      ` Keep it now; it cannot be retrieved again. ${use}`,
      '================================================================================',
      '',
    ].join('\n'),
  );
}

export const printAdminKey = (created: CreatedTenant, write: (text: string) => void): void =>
  printSecretOnce(`Tenant "${created.tenant.name}" (${created.tenant.id}): its admin API key`, created.key.secret, write);

/** `grantd tenant create|list`, on the database (tenants have no HTTP endpoint). */
export function registerTenant(program: Command): void {
  const tenant = program
    .command('tenant')
    .description('create and list tenants, on the database (DATABASE_URL)')
    .addHelpText('after', DATABASE_ENVIRONMENT);

  tenant
    .command('create')
    .description('create a tenant and print its admin key, once')
    .argument('<name>', '1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit')
    .option('--json', 'print {"tenant": {id, name}, "key": {...secret}}')
    .addHelpText('after', DATABASE_ENVIRONMENT)
    .action(async (name: string, options: { json?: boolean }) => {
      const { withDatabase, createTenant } = await databaseModules();
      const created = await withDatabase(loadConfig(), (db) => createTenant(db, name));
      if (options.json) printJson(await tenantJson(created));
      else printAdminKey(created, (text) => process.stdout.write(text));
    });

  tenant
    .command('list')
    .description('list the tenants, by name')
    .option('--json', 'print {"tenants": [{id, name, created_at}]}')
    .addHelpText('after', DATABASE_ENVIRONMENT)
    .action(async (options: { json?: boolean }) => {
      const { withDatabase, listTenants } = await databaseModules();
      const tenants = await withDatabase(loadConfig(), listTenants);
      const rows = tenants.map((t) => ({ id: t.id, name: t.name, created_at: t.createdAt.toISOString() }));
      if (options.json) return printJson({ tenants: rows });
      printTable(
        ['NAME', 'ID', 'CREATED'],
        rows.map((t) => [t.name, t.id, t.created_at]),
      );
    });
}

/** `grantd key create --tenant <name>`: a key made on the database, the way back in after the admin key is lost. */
export function registerKey(program: Command): void {
  const key = program
    .command('key')
    .description("create a tenant's key on the database (DATABASE_URL), without an API key")
    .addHelpText('after', DATABASE_ENVIRONMENT);

  key
    .command('create')
    .description('create a key of a tenant and print it, once: the way back in after its admin key was lost')
    .requiredOption('--tenant <name>', 'the tenant, by name (grantd tenant list)')
    .option('--scopes <scopes>', `comma-separated, of ${KEY_SCOPES.join(', ')}`, commaList, ['admin'])
    .option('--label <text>', 'a name for people', 'recovery')
    .option('--json', 'print {"tenant": {id, name}, "key": {...secret}}')
    .addHelpText('after', DATABASE_ENVIRONMENT)
    .action(async (options: { tenant: string; scopes: string[]; label: string; json?: boolean }) => {
      const scopes = options.scopes.map((scope) => {
        const parsed = KeyScopeSchema.safeParse(scope);
        if (!parsed.success) throw new CliError(`grantd key create: unknown scope ${scope}; scopes are ${KEY_SCOPES.join(', ')}`, 2);
        return parsed.data;
      });
      if (scopes.length === 0) throw new CliError(`grantd key create: give at least one scope, of ${KEY_SCOPES.join(', ')}`, 2);
      const { withDatabase, findTenant, createKey } = await databaseModules();
      const created = await withDatabase(loadConfig(), async (db) => {
        const found = await findTenant(db, options.tenant);
        if (!found) throw new CliError(`grantd key create: no tenant named ${options.tenant} (grantd tenant list shows them)`);
        return { tenant: found, key: await createKey(db, found.id, options.label, scopes) };
      });
      if (options.json) return printJson(await tenantJson(created));
      printSecretOnce(`Tenant "${created.tenant.name}": API key ${created.key.id} (${created.key.scopes.join(', ')})`, created.key.secret, (text) =>
        process.stdout.write(text),
      );
    });
}
