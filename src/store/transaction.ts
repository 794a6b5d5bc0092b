import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from './db.ts';
import { isWriteConflict } from './errors.ts';
import type { Prisma } from './prisma/client.ts';
import { noteWrite } from './revisions.ts';

/** A transaction may wait 10 s for a connection and run 30 s. */
const TX_OPTIONS = { maxWait: 10_000, timeout: 30_000 };
/** Runs of a transaction PostgreSQL aborted for a conflict, before its error is the caller's. */
const ATTEMPTS = 4;

/**
 * Runs `work` in a transaction, again when PostgreSQL rolled it back for a deadlock or a
 * serialization failure: one of two writers that lock the same rows in opposite orders is chosen
 * to fail, and the request behind it should not. `work` must have no effect outside the transaction.
 * Run for a request, it names the request's actor to the changes feed and gives its revision (noteWrite):
 * every write of the API goes through here.
 */
export async function transaction<T>(db: Db, work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.$transaction(async (tx) => {
        await noteWrite(tx);
        return work(tx);
      }, TX_OPTIONS);
    } catch (error) {
      if (attempt === ATTEMPTS || !isWriteConflict(error)) throw error;
      // Apart, so that the two writers do not meet again at once.
      await sleep(Math.random() * 10 * 2 ** attempt);
    }
  }
}
