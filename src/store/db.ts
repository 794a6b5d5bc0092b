import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from './prisma/client.ts';

export type Db = PrismaClient;

export interface Database {
  db: Db;
  /** The pool under Prisma, for its gauges. */
  pool: pg.Pool;
  close: () => Promise<void>;
}

/**
 * A Prisma client over a pg pool of the given size. When the database goes away, requests fail
 * within a few seconds (connect and statement timeouts) instead of hanging, and the pool
 * reconnects by itself when it returns.
 */
export function connect(url: string, poolSize: number, onPoolError: (error: Error) => void = () => undefined): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 2_000,
    idleTimeoutMillis: 30_000,
    query_timeout: 15_000,
    statement_timeout: 10_000,
    keepAlive: true,
  });
  // An idle client losing its connection emits here; without a listener it would crash the process.
  pool.on('error', onPoolError);
  const db = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    db,
    pool,
    close: async () => {
      await db.$disconnect();
      await pool.end();
    },
  };
}
