import { isDeepStrictEqual } from 'node:util';
import { MODEL_LIMITS } from '../../contract/namespaces.ts';
import { assertNoExclusionCycle } from '../engine/definition-checks.ts';
import { BUILTIN_NAMESPACES, type Triple } from '../engine/refs.ts';
import { assertRelationOf, CompiledSchema, type NamespaceDefinition, type RelationDefinitions } from '../engine/schema.ts';
import { DomainError } from '../errors.ts';
import type { Db } from './db.ts';
import { isUniqueViolation } from './errors.ts';
import { Prisma } from './prisma/client.ts';
import { transaction } from './transaction.ts';

export interface NamespaceRow {
  name: string;
  relations: RelationDefinitions | null;
  createdAt: Date;
  updatedAt: Date;
}

const toRow = (r: { name: string; relations: Prisma.JsonValue; createdAt: Date; updatedAt: Date }): NamespaceRow => ({
  name: r.name,
  relations: r.relations as RelationDefinitions | null,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

const relationsData = (relations: RelationDefinitions | null) => (relations === null ? Prisma.DbNull : (relations as Prisma.InputJsonObject));

/**
 * Creates the namespace unless the tenant's model would pass one of its limits. The tenant's row is
 * locked first, so that concurrent creates count one after the other and never pass a limit.
 */
export async function createNamespace(db: Db, tenantId: string, name: string, relations: RelationDefinitions | null): Promise<NamespaceRow> {
  try {
    const row = await transaction(db, async (tx) => {
      await lockTenant(tx, tenantId);
      const held = await namespaceDefinitions(tx, tenantId);
      assertRoomFor(held, { name, relations });
      return tx.namespace.create({ data: { tenantId, name, relations: relationsData(relations) } });
    });
    return toRow(row);
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new DomainError('namespace-exists', `namespace ${name} already exists`);
    }
    throw error;
  }
}

/**
 * Replaces the namespace's definition, unless grants use a relation the new one does not declare
 * (409 namespace-in-use) or the tenant's model would no longer compile within its limit. The
 * namespace's row is locked (FOR UPDATE) before the grants are counted: grant writes lock it in
 * share mode and check their relation against it (lockNamespacesOf), so a grant written meanwhile
 * is either counted here or checked against the new definition. The tenant's row is locked after
 * it, as creates lock it, so that the limit is never passed by two changes together.
 */
export async function updateNamespace(db: Db, tenantId: string, name: string, relations: RelationDefinitions | null): Promise<NamespaceRow> {
  assertChangeable(name);
  return transaction(db, async (tx) => {
    const current = await lockNamespace(tx, tenantId, name);
    // The same definition again is no change: nothing to recompile, and updated_at stays.
    if (isDeepStrictEqual(current.relations, relations)) return current;
    if (relations !== null) await assertUnusedBeyond(tx, tenantId, name, relations);
    await lockTenant(tx, tenantId);
    const held = await namespaceDefinitions(tx, tenantId);
    assertModel(
      held.map((ns) => (ns.name === name ? { name, relations } : ns)),
      'with this definition',
    );
    const row = await tx.namespace.update({
      where: { tenantId_name: { tenantId, name } },
      data: { relations: relationsData(relations), updatedAt: new Date() },
    });
    return toRow(row);
  });
}

/** Deletes the namespace unless a grant names an object or a subject in it (409 namespace-in-use); locks as updateNamespace does. */
export async function deleteNamespace(db: Db, tenantId: string, name: string): Promise<void> {
  assertChangeable(name);
  await transaction(db, async (tx) => {
    await lockNamespace(tx, tenantId, name);
    const [used] = await tx.$queryRaw<{ objects: number; subjects: number }[]>`
      SELECT (SELECT count(*) FROM grants WHERE tenant_id = ${tenantId}::uuid AND object_ns = ${name})::int AS objects,
             (SELECT count(*) FROM grants WHERE tenant_id = ${tenantId}::uuid AND subject_ns = ${name})::int AS subjects`;
    const uses = [
      used!.objects > 0 ? `${grants(used!.objects)} ${used!.objects === 1 ? 'names' : 'name'} an object in it` : null,
      used!.subjects > 0 ? `${grants(used!.subjects)} ${used!.subjects === 1 ? 'names' : 'name'} a subject in it` : null,
    ].filter((use) => use !== null);
    if (uses.length > 0) {
      throw new DomainError('namespace-in-use', `namespace ${name} is in use: ${uses.join(' and ')}; revoke them before deleting it`);
    }
    await tx.namespace.delete({ where: { tenantId_name: { tenantId, name } } });
  });
}

export async function getNamespace(db: Db, tenantId: string, name: string): Promise<NamespaceRow> {
  const row = await db.namespace.findUnique({ where: { tenantId_name: { tenantId, name } } });
  if (!row) throw new DomainError('namespace-not-found', `namespace ${name} does not exist`);
  return toRow(row);
}

/**
 * Locks (FOR SHARE, until the transaction ends) the namespaces the triples name, objects' and
 * subjects', and refuses the first triple whose object's namespace does not exist or does not
 * declare its relation. A change or delete of one of them waits for the lock, and one that went
 * first is what the triples are checked against: see updateNamespace.
 */
export async function lockNamespacesOf(tx: Prisma.TransactionClient, tenantId: string, triples: readonly Triple[]): Promise<void> {
  // user and agent never change: nothing to lock (most grants name a user, and would all share one row's lock).
  const names = [...new Set(triples.flatMap((t) => [t.object.ns, t.subject.ns]))].filter((name) => !isBuiltin(name)).sort();
  const rows =
    names.length === 0
      ? []
      : await tx.$queryRaw<NamespaceDefinition[]>`
          SELECT name, relations FROM namespaces
          WHERE tenant_id = ${tenantId}::uuid AND name = ANY(${names}::text[])
          ORDER BY name
          FOR SHARE`;
  const byName = new Map<string, NamespaceDefinition>(BUILTIN_NAMESPACES.map((name) => [name, { name, relations: null }]));
  for (const ns of rows) byName.set(ns.name, ns);
  for (const t of triples) assertRelationOf(byName.get(t.object.ns), t.object.ns, t.relation);
}

function assertChangeable(name: string): void {
  if (isBuiltin(name)) throw new DomainError('invalid-namespace', `namespace ${name} is built in and cannot be changed or deleted`);
}

async function lockTenant(tx: Prisma.TransactionClient, tenantId: string): Promise<void> {
  await tx.$queryRaw`SELECT 1 FROM tenants WHERE id = ${tenantId}::uuid FOR UPDATE`;
}

/** The namespace, locked FOR UPDATE until the transaction ends. */
async function lockNamespace(tx: Prisma.TransactionClient, tenantId: string, name: string): Promise<NamespaceRow> {
  const [row] = await tx.$queryRaw<NamespaceRow[]>`
    SELECT name, relations, created_at AS "createdAt", updated_at AS "updatedAt" FROM namespaces
    WHERE tenant_id = ${tenantId}::uuid AND name = ${name}
    FOR UPDATE`;
  if (!row) throw new DomainError('namespace-not-found', `namespace ${name} does not exist`);
  return row;
}

/** Refuses a definition that would leave grants on the namespace's objects with a relation it does not declare. */
async function assertUnusedBeyond(tx: Prisma.TransactionClient, tenantId: string, name: string, relations: RelationDefinitions): Promise<void> {
  const undeclared = await tx.$queryRaw<{ relation: string; grants: number }[]>`
    SELECT relation, count(*)::int AS grants FROM grants
    WHERE tenant_id = ${tenantId}::uuid AND object_ns = ${name} AND relation <> ALL(${Object.keys(relations)}::text[])
    GROUP BY relation ORDER BY relation`;
  if (undeclared.length === 0) return;
  const uses = undeclared.map((u) => `${u.relation} (${grants(u.grants)})`).join(', ');
  throw new DomainError(
    'namespace-in-use',
    `namespace ${name} would no longer declare relations that grants use: ${uses}; declare them, or revoke those grants first`,
  );
}

const grants = (count: number): string => `${count} ${count === 1 ? 'grant' : 'grants'}`;

/** Refuses a namespace past the tenant's limit of namespaces, or one the tenant's model would not take (assertModel). */
function assertRoomFor(held: NamespaceDefinition[], created: NamespaceDefinition): void {
  const own = held.filter((ns) => !isBuiltin(ns.name)).length;
  if (own >= MODEL_LIMITS.namespacesPerTenant && !isBuiltin(created.name)) {
    throw new DomainError(
      'invalid-request',
      `a tenant holds at most ${MODEL_LIMITS.namespacesPerTenant} namespaces besides user and agent, and this one holds ${own}`,
    );
  }
  assertModel([...held, created], 'with this namespace');
}

/**
 * Refuses a tenant's model, as it would be after a change, that compiles past the limit of rows or
 * has a cycle through an exclusion: only the whole model shows either (docs/model.md#model-limits).
 */
function assertModel(model: NamespaceDefinition[], change: string): void {
  assertNoExclusionCycle(model);
  const rows = CompiledSchema.rowsOf(model);
  if (rows > MODEL_LIMITS.compiledRowsPerTenant) {
    throw new DomainError(
      'invalid-request',
      `a tenant's model compiles to at most ${MODEL_LIMITS.compiledRowsPerTenant} rows (closure rows and arrows of all its namespaces), ` +
        `and ${change} this one's would compile to ${rows}`,
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
