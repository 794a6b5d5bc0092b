import { randomBytes, randomUUID } from 'node:crypto';
import { BUILTIN_NAMESPACES } from '../engine/refs.ts';
import { DomainError } from '../errors.ts';
import type { Db } from './db.ts';
import { isUniqueViolation } from './errors.ts';
import { createKey, type CreatedKey } from './keys.ts';
import { Prisma } from './prisma/client.ts';
import { transaction } from './transaction.ts';

export interface CreatedTenant {
  tenant: { id: string; name: string };
  key: CreatedKey;
}

const TENANT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** A tenant with its built-in namespaces and a first admin key, all or nothing. */
export const createTenant = (db: Db, name: string): Promise<CreatedTenant> => transaction(db, (tx) => insertTenant(tx, name));

/**
 * Makes in `tx` a tenant with its built-in namespaces and a first admin key, for a transaction that
 * makes more with them (createTenantWithConsoleClient): all or nothing with the rest.
 */
export async function insertTenant(tx: Prisma.TransactionClient, name: string): Promise<CreatedTenant> {
  if (!TENANT_NAME_PATTERN.test(name)) {
    throw new DomainError('invalid-request', 'tenant names are 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit');
  }
  const tenant = await tx.tenant.create({ data: { id: randomUUID(), name, cursorSecret: randomBytes(32) } }).catch((error: unknown) => {
    throw isUniqueViolation(error) ? new DomainError('invalid-request', `a tenant named ${name} already exists`) : error;
  });
  await tx.namespace.createMany({
    data: BUILTIN_NAMESPACES.map((ns) => ({ tenantId: tenant.id, name: ns, relations: Prisma.DbNull })),
  });
  const key = await createKey(tx, tenant.id, 'admin', ['admin']);
  return { tenant: { id: tenant.id, name: tenant.name }, key };
}

export const countTenants = (db: Db): Promise<number> => db.tenant.count();

/** Every tenant, by name: for operators (`grantd tenant list`), never for the API. */
export const listTenants = (db: Db): Promise<{ id: string; name: string; createdAt: Date }[]> =>
  db.tenant.findMany({ select: { id: true, name: true, createdAt: true }, orderBy: { name: 'asc' } });

/** A tenant's name by its id, for the pages that name it (the consent page); its id if it is gone. */
export const tenantNameOf = async (db: Db, id: string): Promise<string> =>
  (await db.tenant.findUnique({ where: { id }, select: { name: true } }))?.name ?? id;

/** The tenant of that name, if any. */
export const findTenant = (db: Db, name: string): Promise<{ id: string; name: string } | null> =>
  db.tenant.findUnique({ where: { name }, select: { id: true, name: true } });
