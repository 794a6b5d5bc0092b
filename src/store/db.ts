import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './prisma/client.ts';

export type Db = PrismaClient;

/** A Prisma client over a pg pool of the given size. */
export function connect(url: string, poolSize: number): Db {
  const adapter = new PrismaPg({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  return new PrismaClient({ adapter });
}
