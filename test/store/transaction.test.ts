import { describe, expect, it, vi } from 'vitest';
import type { Db } from '../../src/store/db.ts';
import { Prisma } from '../../src/store/prisma/client.ts';
import { transaction } from '../../src/store/transaction.ts';

/** What Prisma throws when PostgreSQL rolled a raw statement's transaction back with this SQLSTATE. */
const withSqlState = (code: string) =>
  Object.assign(new Error(`SQLSTATE ${code}`), { meta: { driverAdapterError: { cause: { originalCode: code } } } });
/** What Prisma throws with one of its own codes. */
const withPrismaCode = (code: string) => new Prisma.PrismaClientKnownRequestError(code, { code, clientVersion: 'test' });

/** A database whose transactions fail with the given errors, in turn, then run the work. */
function databaseFailing(...errors: Error[]) {
  const $transaction = vi.fn(async (work: (tx: unknown) => Promise<unknown>) => {
    const error = errors[$transaction.mock.calls.length - 1];
    if (error) throw error;
    return work('tx');
  });
  return { db: { $transaction } as unknown as Db, runs: () => $transaction.mock.calls.length };
}

describe('transaction', () => {
  it.each([
    ['a deadlock (40P01)', withSqlState('40P01')],
    ['a serialization failure (40001)', withSqlState('40001')],
    ["Prisma's write conflict (P2034)", withPrismaCode('P2034')],
  ])('runs the work again after %s, and answers what it returns', async (_, error) => {
    const { db, runs } = databaseFailing(error, error);
    expect(await transaction(db, async (tx) => `done in ${tx as unknown as string}`)).toBe('done in tx');
    expect(runs()).toBe(3);
  });

  it('gives up after four runs, with the last conflict', async () => {
    const conflicts = [1, 2, 3, 4, 5].map(() => withSqlState('40P01'));
    const { db, runs } = databaseFailing(...conflicts);
    await expect(transaction(db, async () => 'never')).rejects.toBe(conflicts[3]);
    expect(runs()).toBe(4);
  });

  it.each([
    ['a unique violation (P2002)', withPrismaCode('P2002')],
    ['a transaction that waited too long for a connection (P2028)', withPrismaCode('P2028')],
    ['a statement cancelled (57014)', withSqlState('57014')],
    ['an error of the work itself', new Error('agent-not-found')],
  ])('does not run the work again after %s', async (_, error) => {
    const { db, runs } = databaseFailing(error);
    await expect(transaction(db, async () => 'never')).rejects.toBe(error);
    expect(runs()).toBe(1);
  });
});
