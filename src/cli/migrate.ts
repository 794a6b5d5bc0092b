import type { Config } from '../config.ts';
import { createLogger, openDatabase } from '../runtime.ts';
import { migrate } from '../store/migrate.ts';

export async function migrateCommand(config: Config): Promise<number> {
  const database = await openDatabase(config, createLogger(config));
  try {
    const applied = await migrate(database.url);
    process.stdout.write(applied.length > 0 ? `applied ${applied.join(', ')}\n` : 'the database is up to date\n');
    return 0;
  } finally {
    await database.stop();
  }
}
