import { AGENT_NAMESPACE, type Ref, type Triple } from '../engine/refs.ts';
import { DomainError } from '../errors.ts';
import type { Db } from './db.ts';
import { lockNamespacesOf } from './namespaces.ts';
import { Prisma } from './prisma/client.ts';
import { transaction } from './transaction.ts';

export interface GrantRow {
  subjectNs: string;
  subjectId: string;
  relation: string;
  objectNs: string;
  objectId: string;
  createdAt: Date;
}

/** Position in the grants' stable order (object, relation, subject), for keyset pagination. */
export type GrantKey = [objectNs: string, objectId: string, relation: string, subjectNs: string, subjectId: string];

const toData = (tenantId: string, t: Triple) => ({
  tenantId,
  subjectNs: t.subject.ns,
  subjectId: t.subject.id,
  relation: t.relation,
  objectNs: t.object.ns,
  objectId: t.object.id,
});

/** External ids of the agents the triples name, as subject or object. */
function namedAgents(triples: readonly Triple[]): string[] {
  const ids = new Set<string>();
  for (const t of triples) {
    if (t.subject.ns === AGENT_NAMESPACE) ids.add(t.subject.id);
    if (t.object.ns === AGENT_NAMESPACE) ids.add(t.object.id);
  }
  return [...ids];
}

/** A write named an agent that is not registered: `externalId` lets a batch name the item. */
export class AgentNotRegistered extends DomainError {
  constructor(readonly externalId: string) {
    super('agent-not-found', `agent ${externalId} is not registered`);
  }
}

/**
 * Locks (KEY SHARE) every agent the triples name until the transaction ends, and refuses the write
 * when one is not registered. The killswitch's delete of the agent row waits for this lock.
 */
async function lockAgents(tx: Prisma.TransactionClient, tenantId: string, triples: readonly Triple[]): Promise<void> {
  const wanted = namedAgents(triples);
  if (wanted.length === 0) return;
  const found = await tx.$queryRaw<{ external_id: string }[]>`
    SELECT external_id FROM agents
    WHERE tenant_id = ${tenantId}::uuid AND external_id = ANY(${wanted}::text[])
    FOR KEY SHARE`;
  const present = new Set(found.map((r) => r.external_id));
  const missing = wanted.find((id) => !present.has(id));
  if (missing !== undefined) throw new AgentNotRegistered(missing);
}

/**
 * Creates the grant, or finds the identical one already there (`created` false), under a share lock
 * of the namespaces it names, against whose definitions its relation is checked (lockNamespacesOf):
 * a concurrent change of the namespace either sees the grant or is seen by it.
 */
export async function createGrant(db: Db, tenantId: string, triple: Triple): Promise<{ row: GrantRow; created: boolean }> {
  const write = async (tx: Prisma.TransactionClient | Db): Promise<{ row: GrantRow; created: boolean }> => {
    const [row] = await tx.grant.createManyAndReturn({ data: [toData(tenantId, triple)], skipDuplicates: true });
    if (row) return { row, created: true };
    const existing = await tx.grant.findUnique({
      where: { tenantId_objectNs_objectId_relation_subjectNs_subjectId: toData(tenantId, triple) },
    });
    // Gone again in between (a concurrent revoke): write it anew.
    return existing ? { row: existing, created: false } : write(tx);
  };
  return transaction(db, async (tx) => {
    await lockNamespacesOf(tx, tenantId, [triple]);
    await lockAgents(tx, tenantId, [triple]);
    return write(tx);
  });
}

export async function deleteGrant(db: Db, tenantId: string, triple: Triple): Promise<void> {
  await db.grant.deleteMany({ where: toData(tenantId, triple) });
}

/** Applies writes and deletes in one transaction; counts grants newly created and actually removed. */
export async function applyBatch(
  db: Db,
  tenantId: string,
  writes: readonly Triple[],
  deletes: readonly Triple[],
): Promise<{ written: number; deleted: number }> {
  return transaction(db, async (tx) => {
    if (writes.length > 0) await lockNamespacesOf(tx, tenantId, writes);
    await lockAgents(tx, tenantId, writes);
    let deleted = 0;
    if (deletes.length > 0) {
      const rows = JSON.stringify(deletes.map((t) => toData(tenantId, t)));
      deleted = await tx.$executeRaw`
        DELETE FROM grants g
        USING (SELECT DISTINCT * FROM jsonb_to_recordset(${rows}::jsonb)
               AS x("subjectNs" text, "subjectId" text, relation text, "objectNs" text, "objectId" text)) d
        WHERE g.tenant_id = ${tenantId}::uuid AND g.object_ns = d."objectNs" AND g.object_id = d."objectId"
          AND g.relation = d.relation AND g.subject_ns = d."subjectNs" AND g.subject_id = d."subjectId"`;
    }
    let written = 0;
    if (writes.length > 0) {
      // One set-based statement, not Prisma's createMany (docs/decisions.md#batch-inserts-are-one-statement).
      // In key order, so that batches writing the same grants lock them in the same order.
      const rows = JSON.stringify(writes.map((t) => toData(tenantId, t)));
      written = await tx.$executeRaw`
        INSERT INTO grants (tenant_id, object_ns, object_id, relation, subject_ns, subject_id)
        SELECT ${tenantId}::uuid, w."objectNs", w."objectId", w.relation, w."subjectNs", w."subjectId"
        FROM jsonb_to_recordset(${rows}::jsonb)
             AS w("subjectNs" text, "subjectId" text, relation text, "objectNs" text, "objectId" text)
        ORDER BY w."objectNs", w."objectId", w.relation, w."subjectNs", w."subjectId"
        ON CONFLICT DO NOTHING`;
    }
    return { written, deleted };
  });
}

export interface GrantFilter {
  subject?: Ref;
  relation?: string;
  object?: Ref;
  namespace?: string;
}

/** Grants matching every given filter, in (object, relation, subject) order, after `after`. */
export function listGrants(db: Db, tenantId: string, filter: GrantFilter, after: GrantKey | null, take: number): Promise<GrantRow[]> {
  const conditions = [Prisma.sql`tenant_id = ${tenantId}::uuid`];
  if (filter.subject) conditions.push(Prisma.sql`subject_ns = ${filter.subject.ns} AND subject_id = ${filter.subject.id}`);
  if (filter.relation) conditions.push(Prisma.sql`relation = ${filter.relation}`);
  if (filter.object) conditions.push(Prisma.sql`object_ns = ${filter.object.ns} AND object_id = ${filter.object.id}`);
  if (filter.namespace) conditions.push(Prisma.sql`object_ns = ${filter.namespace}`);
  if (after) {
    conditions.push(
      Prisma.sql`(object_ns, object_id, relation, subject_ns, subject_id) > (${after[0]}, ${after[1]}, ${after[2]}, ${after[3]}, ${after[4]})`,
    );
  }
  return db.$queryRaw<GrantRow[]>`
    SELECT subject_ns AS "subjectNs", subject_id AS "subjectId", relation, object_ns AS "objectNs", object_id AS "objectId",
           created_at AS "createdAt"
    FROM grants
    WHERE ${Prisma.join(conditions, ' AND ')}
    ORDER BY object_ns, object_id, relation, subject_ns, subject_id
    LIMIT ${take}`;
}

export const grantKey = (g: GrantRow): GrantKey => [g.objectNs, g.objectId, g.relation, g.subjectNs, g.subjectId];
