import { MODEL_LIMITS } from '../../contract/namespaces.ts';
import { BUILTIN_NAMESPACES } from '../engine/refs.ts';
import type { RelationDefinitions } from '../engine/schema.ts';
import { DomainError } from '../errors.ts';
import type { Db } from './db.ts';
import { Prisma } from './prisma/client.ts';
import { transaction } from './transaction.ts';

export interface NamespaceRow {
  name: string;
  relations: RelationDefinitions | null;
  createdAt: Date;
}

const toRow = (r: { name: string; relations: Prisma.JsonValue; createdAt: Date }): NamespaceRow => ({
  name: r.name,
  relations: r.relations as RelationDefinitions | null,
  createdAt: r.createdAt,
});

/**
 * Creates the namespace unless the tenant already holds its limit of namespaces. The tenant's row
 * is locked first, so that concurrent creates count one after the other and never pass the limit.
 */
export async function createNamespace(db: Db, tenantId: string, name: string, relations: RelationDefinitions | null): Promise<NamespaceRow> {
  try {
    const row = await transaction(db, async (tx) => {
      await tx.$queryRaw`SELECT 1 FROM tenants WHERE id = ${tenantId}::uuid FOR UPDATE`;
      const own = await tx.namespace.count({ where: { tenantId, name: { notIn: [...BUILTIN_NAMESPACES] } } });
      if (own >= MODEL_LIMITS.namespacesPerTenant && !BUILTIN_NAMESPACES.includes(name as never)) {
        throw new DomainError(
          'invalid-request',
          `a tenant holds at most ${MODEL_LIMITS.namespacesPerTenant} namespaces besides user and agent, and this one holds ${own}`,
        );
      }
      return tx.namespace.create({
        data: { tenantId, name, relations: relations === null ? Prisma.DbNull : (relations as Prisma.InputJsonObject) },
      });
    });
    return toRow(row);
  } catch (error) {
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002') {
      throw new DomainError('namespace-exists', `namespace ${name} already exists`);
    }
    throw error;
  }
}

export async function listNamespaces(db: Db, tenantId: string): Promise<NamespaceRow[]> {
  const rows = await db.namespace.findMany({ where: { tenantId }, orderBy: { name: 'asc' } });
  return rows.map(toRow);
}
