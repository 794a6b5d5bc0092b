import type pg from 'pg';
import { EVERY_SUBJECT_ID } from '../../contract/schemas.ts';
import type { GrantWindow } from '../engine/grant-window.ts';
import { AGENT_NAMESPACE, type Ref, type Triple } from '../engine/refs.ts';
import { DomainError } from '../errors.ts';
import { lockRegisteredAgents } from './agent-locks.ts';
import type { Db } from './db.ts';
import { lockNamespacesOf } from './namespaces.ts';
import { Prisma } from './prisma/client.ts';
import { transaction } from './transaction.ts';

/** A grant as the grants table holds it: its triple, when it was made, and its window. */
export interface StoredGrant {
  subjectNs: string;
  subjectId: string;
  relation: string;
  objectNs: string;
  objectId: string;
  createdAt: Date;
  notBefore: Date | null;
  expiresAt: Date | null;
}

/** A grant to write: its triple and its window (null or absent: none). */
export type GrantWrite = Triple & { window?: GrantWindow | null };

/** What writing a grant did: created it, found it with the same window, or replaced its window. */
export type WriteOutcome = 'created' | 'unchanged' | 'replaced';

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

/** External ids of the agents the triples name, as subject or object; `agent:*` (every agent, docs/model.md#public-grants) names none. */
function namedAgents(triples: readonly Triple[]): string[] {
  const ids = new Set<string>();
  for (const t of triples) {
    if (t.subject.ns === AGENT_NAMESPACE && t.subject.id !== EVERY_SUBJECT_ID) ids.add(t.subject.id);
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
  const present = await lockRegisteredAgents(tx, tenantId, wanted);
  const missing = wanted.find((id) => !present.has(id));
  if (missing !== undefined) throw new AgentNotRegistered(missing);
}

const timesOf = (window: GrantWindow | null | undefined) => ({
  notBefore: window?.notBefore == null ? null : new Date(window.notBefore),
  expiresAt: window?.expiresAt == null ? null : new Date(window.expiresAt),
});

/**
 * A batch's write as its statement reads it (jsonb_to_recordset), one literal with its times as ISO
 * text: spreading toData and timesOf, and JSON.stringify calling each Date's toJSON, took 4-6 ms for
 * a batch of 1,000 on a quiet machine, in one turn of the event loop; this, 1.7-1.9 (docs/measurements.md, session 32).
 */
const batchRowOf = (tenantId: string, w: GrantWrite) => ({
  tenantId,
  subjectNs: w.subject.ns,
  subjectId: w.subject.id,
  relation: w.relation,
  objectNs: w.object.ns,
  objectId: w.object.id,
  notBefore: isoTime(w.window?.notBefore),
  expiresAt: isoTime(w.window?.expiresAt),
});
const isoTime = (ms: number | null | undefined) => (ms == null ? null : new Date(ms).toISOString());

const sameTimes = (row: StoredGrant, window: GrantWindow | null | undefined): boolean =>
  (row.notBefore?.getTime() ?? null) === (window?.notBefore ?? null) && (row.expiresAt?.getTime() ?? null) === (window?.expiresAt ?? null);

/**
 * Creates the grant; or finds it already there with the same window; or replaces its window (a
 * delete and an insert, which the grant log records as such, keeping its created_at). All under a
 * share lock of the namespaces it names, against whose definitions its relation is checked
 * (lockNamespacesOf): a concurrent change of the namespace either sees the grant or is seen by it.
 */
export async function createGrant(db: Db, tenantId: string, triple: GrantWrite): Promise<{ row: StoredGrant; outcome: WriteOutcome }> {
  const { window } = triple;
  const key = { tenantId_objectNs_objectId_relation_subjectNs_subjectId: toData(tenantId, triple) };
  const write = async (tx: Prisma.TransactionClient): Promise<{ row: StoredGrant; outcome: WriteOutcome }> => {
    const [row] = await tx.grant.createManyAndReturn({ data: [{ ...toData(tenantId, triple), ...timesOf(window) }], skipDuplicates: true });
    if (row) return { row, outcome: 'created' };
    const existing = await tx.grant.findUnique({ where: key });
    // Gone again in between (a concurrent revoke): write it anew.
    if (!existing) return write(tx);
    if (sameTimes(existing, window)) return { row: existing, outcome: 'unchanged' };
    // Only the row read: a concurrent replacement makes this one start again.
    const { count } = await tx.grant.deleteMany({
      where: { ...toData(tenantId, triple), notBefore: existing.notBefore, expiresAt: existing.expiresAt },
    });
    if (count === 0) return write(tx);
    const replaced = await tx.grant.create({ data: { ...toData(tenantId, triple), ...timesOf(window), createdAt: existing.createdAt } });
    return { row: replaced, outcome: 'replaced' };
  };
  return transaction(db, async (tx) => {
    await lockNamespacesOf(tx, tenantId, [triple]);
    await lockAgents(tx, tenantId, [triple]);
    return write(tx);
  });
}

export async function deleteGrant(db: Db, tenantId: string, triple: Triple): Promise<void> {
  await transaction(db, (tx) => tx.grant.deleteMany({ where: toData(tenantId, triple) }));
}

/**
 * Applies writes and deletes in one transaction; counts grants newly created or whose window was
 * replaced, and grants actually removed.
 */
export async function applyBatch(
  db: Db,
  tenantId: string,
  writes: readonly GrantWrite[],
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
      // In key order, so that batches writing the same grants lock them in the same order. A grant
      // already there with another window is deleted first, then inserted again with the new one
      // and its created_at (two statements: the grant log records a delete and an insert).
      const rows = JSON.stringify(writes.map((w) => batchRowOf(tenantId, w)));
      const replaced = await tx.$queryRaw<{ k: string; created_at: Date }[]>`
        DELETE FROM grants g
        USING (SELECT DISTINCT * FROM jsonb_to_recordset(${rows}::jsonb)
               AS x("subjectNs" text, "subjectId" text, relation text, "objectNs" text, "objectId" text, "notBefore" timestamptz, "expiresAt" timestamptz)) w
        WHERE g.tenant_id = ${tenantId}::uuid AND g.object_ns = w."objectNs" AND g.object_id = w."objectId"
          AND g.relation = w.relation AND g.subject_ns = w."subjectNs" AND g.subject_id = w."subjectId"
          AND (g.not_before IS DISTINCT FROM w."notBefore" OR g.expires_at IS DISTINCT FROM w."expiresAt")
        RETURNING jsonb_build_array(g.subject_ns, g.subject_id, g.relation, g.object_ns, g.object_id)::text AS k, g.created_at`;
      const createdAt = JSON.stringify(Object.fromEntries(replaced.map((r) => [r.k, r.created_at])));
      written = await tx.$executeRaw`
        INSERT INTO grants (tenant_id, object_ns, object_id, relation, subject_ns, subject_id, not_before, expires_at, created_at)
        SELECT ${tenantId}::uuid, w."objectNs", w."objectId", w.relation, w."subjectNs", w."subjectId", w."notBefore", w."expiresAt",
               COALESCE((${createdAt}::jsonb ->> jsonb_build_array(w."subjectNs", w."subjectId", w.relation, w."objectNs", w."objectId")::text)::timestamptz, now())
        FROM jsonb_to_recordset(${rows}::jsonb)
             AS w("subjectNs" text, "subjectId" text, relation text, "objectNs" text, "objectId" text, "notBefore" timestamptz, "expiresAt" timestamptz)
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
  /** Only grants in force at `now` (else also those not yet in force). */
  active?: boolean;
}

/**
 * Grants matching every given filter, in (object, relation, subject) order, after `after`; never
 * one expired at `now` (the sweep deletes it later), nor with `active` one not yet in force.
 * A statement on the pool under Prisma, rows as arrays, as the feed's page is: Prisma's raw query
 * decodes every row twice (docs/decisions.md#the-feed-is-read-past-prisma). Its text is built for
 * the filters given, so that PostgreSQL plans each with the indexes that serve it.
 */
export async function listGrants(
  pool: pg.Pool,
  tenantId: string,
  filter: GrantFilter,
  after: GrantKey | null,
  take: number,
  now: Date,
): Promise<StoredGrant[]> {
  const values: unknown[] = [];
  const param = (value: unknown) => `$${values.push(value)}`;
  const conditions = [`tenant_id = ${param(tenantId)}::uuid`, `(expires_at IS NULL OR expires_at > ${param(now)})`];
  if (filter.active) conditions.push(`(not_before IS NULL OR not_before <= ${param(now)})`);
  if (filter.subject) conditions.push(`subject_ns = ${param(filter.subject.ns)} AND subject_id = ${param(filter.subject.id)}`);
  if (filter.relation) conditions.push(`relation = ${param(filter.relation)}`);
  if (filter.object) conditions.push(`object_ns = ${param(filter.object.ns)} AND object_id = ${param(filter.object.id)}`);
  if (filter.namespace) conditions.push(`object_ns = ${param(filter.namespace)}`);
  if (after) conditions.push(`(object_ns, object_id, relation, subject_ns, subject_id) > (${after.map(param).join(', ')})`);
  const { rows } = await pool.query<[string, string, string, string, string, Date, Date | null, Date | null]>({
    text: `SELECT subject_ns, subject_id, relation, object_ns, object_id, created_at, not_before, expires_at
      FROM grants
      WHERE ${conditions.join(' AND ')}
      ORDER BY object_ns, object_id, relation, subject_ns, subject_id
      LIMIT ${param(take)}`,
    values,
    rowMode: 'array',
  });
  return rows.map(([subjectNs, subjectId, relation, objectNs, objectId, createdAt, notBefore, expiresAt]) => ({
    subjectNs,
    subjectId,
    relation,
    objectNs,
    objectId,
    createdAt,
    notBefore,
    expiresAt,
  }));
}

export const grantKey = (g: StoredGrant): GrantKey => [g.objectNs, g.objectId, g.relation, g.subjectNs, g.subjectId];
