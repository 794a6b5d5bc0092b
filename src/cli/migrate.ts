import type { Command } from 'commander';
import { loadConfig } from '../config.ts';

/** `grantd migrate`: applies the migrations the database has not seen yet (serve does too, at start). */
export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('apply pending database migrations (DATABASE_URL, or the embedded database)')
    .action(async () => {
      // Loaded here, not at start: the API commands need none of the database's modules.
      const [{ createLogger }, { openDatabase }, { migrate }, { explainingDatabaseErrors }] = await Promise.all([
        import('../logger.ts'),
        import('../store/open-database.ts'),
        import('../store/migrate.ts'),
        import('./database.ts'),
      ]);
      const config = loadConfig();
      const database = await openDatabase(config, createLogger(config, 'stderr'));
      try {
        const applied = await explainingDatabaseErrors(database.url, () => migrate(database.url));
        process.stdout.write(applied.length > 0 ? `applied ${applied.join(', ')}\n` : 'the database is up to date\n');
      } finally {
        await database.stop();
      }
    });
}
