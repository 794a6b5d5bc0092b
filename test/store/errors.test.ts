import { describe, expect, it } from 'vitest';
import { isCancelled, isUniqueViolation, isWriteConflict, storeFailureOf } from '../../src/store/errors.ts';
import { Prisma } from '../../src/store/prisma/client.ts';

/** An error as Prisma's driver adapter reports a raw statement's SQLSTATE. */
const adapterError = (sqlState: string) => ({ code: 'P2010', meta: { driverAdapterError: { cause: { originalCode: sqlState } } } });
const prismaKnown = (code: string) => new Prisma.PrismaClientKnownRequestError('failed', { code, clientVersion: 'test' });

describe('what the database says', () => {
  it('tells write conflicts, cancellations and outages apart, from pg, from Prisma and through causes', () => {
    expect(storeFailureOf(prismaKnown('P2034'))).toBe('write-conflict');
    expect(storeFailureOf(adapterError('40P01'))).toBe('write-conflict');
    expect(storeFailureOf({ code: '57014', message: 'canceling statement due to statement timeout' })).toBe('cancelled');
    expect(storeFailureOf(adapterError('57014'))).toBe('cancelled');
    expect(storeFailureOf(new Error('wrapped', { cause: { code: '57014' } }))).toBe('cancelled');
    expect(storeFailureOf({ code: '08006' })).toBe('unavailable');
    expect(storeFailureOf(adapterError('57P01'))).toBe('unavailable');
    expect(storeFailureOf(new Error('connect ECONNREFUSED 127.0.0.1:9'))).toBe('unavailable');
    expect(storeFailureOf(prismaKnown('P2024'))).toBe('unavailable');
    expect(storeFailureOf(new Error('a bug'))).toBeNull();
    expect(storeFailureOf(adapterError('22021'))).toBeNull(); // invalid byte sequence: the request's, not the database's
  });

  it('names each kind once', () => {
    expect(isWriteConflict(adapterError('40001'))).toBe(true);
    expect(isCancelled(adapterError('40001'))).toBe(false);
    expect(isUniqueViolation(prismaKnown('P2002'))).toBe(true);
    expect(isUniqueViolation(prismaKnown('P2003'))).toBe(false);
    expect(isUniqueViolation({ code: 'P2002' })).toBe(false); // only Prisma's own error says so
  });
});
