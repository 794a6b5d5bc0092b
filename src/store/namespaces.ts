import { MODEL_LIMITS } from '../../contract/namespaces.ts';
import { BUILTIN_NAMESPACES } from '../engine/refs.ts';
import { CompiledSchema, type NamespaceDefinition, type RelationDefinitions } from '../engine/schema.ts';
import { DomainError } from '../errors.ts';
import type { Db } from './db.ts';
import { isUniqueViolation } from './errors.ts';
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
 * Creates the namespace unless the tenant's model would pass one of its limits. The tenant's row is
 * locked first, so that concurrent creates count one after the other and never pass a limit.
 */
export async function createNamespace(db: Db, tenantId: string, name: string, relations: RelationDefinitions | null): Promise<NamespaceRow> {
  try {
    const row = await transaction(db, async (tx) => {
      await tx.$queryRaw`SELECT 1 FROM tenants WHERE id = ${tenantId}::uuid FOR UPDATE`;
      const held = await namespaceDefinitions(tx, tenantId);
      assertRoomFor(held, { name, relations });
      return tx.namespace.create({
        data: { tenantId, name, relations: relations === null ? Prisma.DbNull : (relations as Prisma.InputJsonObject) },
      });
    });
    return toRow(row);
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new DomainError('namespace-exists', `namespace ${name} already exists`);
    }
    throw error;
  }
}

/** Refuses a namespace past the tenant's limit of namespaces, or one its model would not compile within the limit of rows. */
function assertRoomFor(held: NamespaceDefinition[], created: NamespaceDefinition): void {
  const own = held.filter((ns) => !isBuiltin(ns.name)).length;
  if (own >= MODEL_LIMITS.namespacesPerTenant && !isBuiltin(created.name)) {
    throw new DomainError(
      'invalid-request',
      `a tenant holds at most ${MODEL_LIMITS.namespacesPerTenant} namespaces besides user and agent, and this one holds ${own}`,
    );
  }
  const rows = new CompiledSchema([...held, created]).rows;
  if (rows > MODEL_LIMITS.compiledRowsPerTenant) {
    throw new DomainError(
      'invalid-request',
      `a tenant's model compiles to at most ${MODEL_LIMITS.compiledRowsPerTenant} rows (closure rows and arrows of all its namespaces), ` +
        `and with this namespace this one's would compile to ${rows}`,
    );
  }
}

const isBuiltin = (name: string): boolean => BUILTIN_NAMESPACES.includes(name as never);

/** The tenant's namespaces as the engine compiles them. */
export async function namespaceDefinitions(db: Db | Prisma.TransactionClient, tenantId: string): Promise<NamespaceDefinition[]> {
  const rows = await db.namespace.findMany({ where: { tenantId }, select: { name: true, relations: true } });
  return rows.map((r) => ({ name: r.name, relations: r.relations as RelationDefinitions | null }));
}

export async function listNamespaces(db: Db, tenantId: string): Promise<NamespaceRow[]> {
  const rows = await db.namespace.findMany({ where: { tenantId }, orderBy: { name: 'asc' } });
  return rows.map(toRow);
}
