import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { startEmbedded } from './embedded.ts';

// Apart from src/runtime.ts (the services of a serving node), so that the commands that only need
// the database (tenant, key create, migrate) do not load the whole service to reach it.
export interface OpenDatabase {
  url: string;
  embedded: boolean;
  stop: () => Promise<void>;
  /** Restarts the embedded PostgreSQL when it exits unasked, and calls `gaveUp` when it keeps exiting; nothing for DATABASE_URL's. */
  watch: (gaveUp: (reason: string) => void) => void;
}

/** The configured database: DATABASE_URL, or the embedded PostgreSQL under GRANTD_DATA_DIR. */
export async function openDatabase(config: Config, logger: Logger): Promise<OpenDatabase> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, embedded: false, stop: async () => undefined, watch: () => undefined };
  const embedded = await startEmbedded(config.GRANTD_DATA_DIR, { info: (line) => logger.info(line), warn: (line) => logger.warn(line) });
  return { ...embedded, embedded: true };
}
