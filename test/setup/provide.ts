import { migrate } from '../../src/store/migrate.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of this run's own, freshly migrated database. */
    databaseUrl: string;
    /** Which kind of database the project runs on. */
    databaseKind: 'embedded' | 'postgres';
  }
}

export async function prepare(url: string): Promise<void> {
  await migrate(url);
}
