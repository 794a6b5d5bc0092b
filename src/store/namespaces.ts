import type { RelationDefinitions } from '../engine/schema.ts';
import { DomainError } from '../errors.ts';
import type { Db } from './db.ts';
import { Prisma } from './prisma/client.ts';

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

export async function createNamespace(db: Db, tenantId: string, name: string, relations: RelationDefinitions | null): Promise<NamespaceRow> {
  try {
    const row = await db.namespace.create({
      data: { tenantId, name, relations: relations === null ? Prisma.DbNull : (relations as Prisma.InputJsonObject) },
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
