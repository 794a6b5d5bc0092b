import type { Config } from '../config.ts';
import { createdKeyBody } from '../http/bodies.ts';
import { createLogger, openDatabase } from '../runtime.ts';
import { connect } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { createTenant, type CreatedTenant } from '../store/tenants.ts';

/** The JSON docs/api.md#tenants gives for `grantd tenant create --json`. */
const tenantJson = ({ tenant, key }: CreatedTenant) => ({
  tenant: { id: tenant.id, name: tenant.name },
  key: createdKeyBody(key),
});

export function printAdminKey(created: CreatedTenant, write: (text: string) => void): void {
  write(
    [
      '',
      '================================================================================',
      ` Tenant "${created.tenant.name}" (${created.tenant.id}): its admin API key, shown ONCE:`,
      '',
      `   ${created.key.secret}`,
      '',
      ' Keep it now; it cannot be retrieved again. Use it as: Authorization: Bearer <key>',
      '================================================================================',
      '',
    ].join('\n'),
  );
}

export async function tenantCreateCommand(config: Config, name: string, json: boolean): Promise<number> {
  const database = await openDatabase(config, createLogger(config));
  const { db, close } = connect(database.url, 2);
  try {
    await migrate(database.url);
    const created = await createTenant(db, name);
    if (json) process.stdout.write(`${JSON.stringify(tenantJson(created))}\n`);
    else printAdminKey(created, (text) => process.stdout.write(text));
    return 0;
  } finally {
    await close();
    await database.stop();
  }
}
