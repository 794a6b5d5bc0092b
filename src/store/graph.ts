import type { GraphQuery, GraphStore } from '../engine/engine.ts';
import { MEMBER_RELATION } from '../engine/refs.ts';
import { CompiledSchema, type NamespaceDefinition, type RelationDefinitions } from '../engine/schema.ts';
import type { Db } from './db.ts';

/** Longest chain of arrows (`T->R`) a check follows (API.md). */
export const MAX_ARROW_DEPTH = 16;

/**
 * The engine's store: each check batch and each listing page is one SQL statement, a recursive
 * query over the grants joined against the tenant's compiled namespace tables (passed as JSON).
 */
export class PrismaGraphStore implements GraphStore {
  constructor(
    private readonly db: Db,
    private readonly schemas: SchemaCache,
  ) {}

  schema(tenantId: string, options?: { fresh?: boolean }): Promise<CompiledSchema> {
    return this.schemas.get(tenantId, options?.fresh ?? false);
  }

  async agentScopes(tenantId: string, externalIds: readonly string[]): Promise<Map<string, string[]>> {
    const agents = await this.db.agent.findMany({
      where: { tenantId, externalId: { in: [...externalIds] } },
      select: { externalId: true, scope: true },
    });
    return new Map(agents.map((a) => [a.externalId, a.scope]));
  }

  async evaluate(tenantId: string, schema: CompiledSchema, queries: readonly GraphQuery[]): Promise<boolean[]> {
    const items = JSON.stringify(
      queries.map((q, i) => ({ i, sns: q.subject.ns, sid: q.subject.id, ons: q.object.ns, oid: q.object.id, rel: q.relation })),
    );
    // targets: every (object, relation) whose direct holders satisfy the check, walking includes
    // and arrows backwards from the checked object; subjects: the subject and its direct groups.
    const rows = await this.db.$queryRaw<Array<{ i: number }>>`
      WITH RECURSIVE
        items AS (SELECT * FROM jsonb_to_recordset(${items}::jsonb) AS x(i int, sns text COLLATE "C", sid text COLLATE "C", ons text COLLATE "C", oid text COLLATE "C", rel text COLLATE "C")),
        closure AS (SELECT * FROM jsonb_to_recordset(${schema.closureJson}::jsonb) AS x(ns text COLLATE "C", rel text COLLATE "C", implied text COLLATE "C")),
        arrows AS (SELECT * FROM jsonb_to_recordset(${schema.arrowsJson}::jsonb) AS x(ns text COLLATE "C", rel text COLLATE "C", via text COLLATE "C", target text COLLATE "C")),
        subjects AS (
          SELECT it.i, it.sns AS ns, it.sid AS id FROM items it
          UNION
          SELECT it.i, g.object_ns, g.object_id FROM items it
          JOIN grants g ON g.tenant_id = ${tenantId}::uuid AND g.subject_ns = it.sns AND g.subject_id = it.sid
            AND g.relation = ${MEMBER_RELATION}
        ),
        targets(i, ns, id, rel, depth) AS (
          SELECT it.i, it.ons, it.oid, COALESCE(c.implied, it.rel), 0
          FROM items it LEFT JOIN closure c ON c.ns = it.ons AND c.rel = it.rel
          UNION
          SELECT t.i, g.subject_ns, g.subject_id, COALESCE(c.implied, a.target), t.depth + 1
          FROM targets t
          JOIN arrows a ON a.ns = t.ns AND a.rel = t.rel
          JOIN grants g ON g.tenant_id = ${tenantId}::uuid AND g.object_ns = t.ns AND g.object_id = t.id AND g.relation = a.via
          LEFT JOIN closure c ON c.ns = g.subject_ns AND c.rel = a.target
          WHERE t.depth < ${MAX_ARROW_DEPTH}
        )
      SELECT DISTINCT t.i FROM targets t
      JOIN subjects s ON s.i = t.i
      WHERE EXISTS (
        SELECT 1 FROM grants g
        WHERE g.tenant_id = ${tenantId}::uuid AND g.object_ns = t.ns AND g.object_id = t.id AND g.relation = t.rel
          AND g.subject_ns = s.ns AND g.subject_id = s.id
      )`;
    const allowed = new Set(rows.map((r) => Number(r.i)));
    return queries.map((_, i) => allowed.has(i));
  }

  async reachable(
    tenantId: string,
    schema: CompiledSchema,
    query: { subject: GraphQuery['subject']; namespace: string; relation: string; after: string | null; limit: number },
  ): Promise<string[]> {
    // held: every (object, relation) the subject or its direct groups hold, walking grants forwards:
    // a held relation confers every relation whose closure implies it, and arrows from held objects.
    const rows = await this.db.$queryRaw<Array<{ id: string }>>`
      WITH RECURSIVE
        closure AS (SELECT * FROM jsonb_to_recordset(${schema.closureJson}::jsonb) AS x(ns text COLLATE "C", rel text COLLATE "C", implied text COLLATE "C")),
        arrows AS (SELECT * FROM jsonb_to_recordset(${schema.arrowsJson}::jsonb) AS x(ns text COLLATE "C", rel text COLLATE "C", via text COLLATE "C", target text COLLATE "C")),
        subjects(ns, id) AS (
          SELECT ${query.subject.ns}::text COLLATE "C", ${query.subject.id}::text COLLATE "C"
          UNION
          SELECT g.object_ns, g.object_id FROM grants g
          WHERE g.tenant_id = ${tenantId}::uuid AND g.subject_ns = ${query.subject.ns} AND g.subject_id = ${query.subject.id}
            AND g.relation = ${MEMBER_RELATION}
        ),
        direct AS (
          SELECT g.object_ns AS ns, g.object_id AS id, g.relation AS rel FROM subjects s
          JOIN grants g ON g.tenant_id = ${tenantId}::uuid AND g.subject_ns = s.ns AND g.subject_id = s.id
        ),
        held(ns, id, rel, depth) AS (
          SELECT d.ns, d.id, d.rel, 0 FROM direct d
          UNION
          SELECT d.ns, d.id, c.rel, 0 FROM direct d JOIN closure c ON c.ns = d.ns AND c.implied = d.rel
          UNION
          SELECT g.object_ns, g.object_id, c.rel, h.depth + 1
          FROM held h
          JOIN grants g ON g.tenant_id = ${tenantId}::uuid AND g.subject_ns = h.ns AND g.subject_id = h.id
          JOIN arrows a ON a.ns = g.object_ns AND a.via = g.relation AND a.target = h.rel
          JOIN closure c ON c.ns = a.ns AND c.implied = a.rel
          WHERE h.depth < ${MAX_ARROW_DEPTH}
        )
      SELECT DISTINCT id FROM held
      WHERE ns = ${query.namespace} AND rel = ${query.relation} AND (${query.after}::text IS NULL OR id > ${query.after}::text)
      ORDER BY id
      LIMIT ${query.limit}`;
    return rows.map((r) => r.id);
  }
}

/**
 * Compiled namespaces per tenant. Namespaces are never changed once created, so a cached schema
 * is only ever missing names: it is reloaded after `maxAgeMs` and at once when a caller asks
 * (a name it does not know may have been created on another node), or on this node's own writes.
 */
export class SchemaCache {
  private readonly entries = new Map<string, { schema: CompiledSchema; loadedAt: number }>();

  constructor(
    private readonly db: Db,
    private readonly maxAgeMs = 750,
  ) {}

  async get(tenantId: string, fresh: boolean): Promise<CompiledSchema> {
    const entry = this.entries.get(tenantId);
    if (!fresh && entry && Date.now() - entry.loadedAt < this.maxAgeMs) return entry.schema;
    const rows = await this.db.namespace.findMany({ where: { tenantId }, select: { name: true, relations: true } });
    const schema = new CompiledSchema(
      rows.map((r): NamespaceDefinition => ({ name: r.name, relations: r.relations as RelationDefinitions | null })),
    );
    this.entries.set(tenantId, { schema, loadedAt: Date.now() });
    return schema;
  }

  invalidate(tenantId: string): void {
    this.entries.delete(tenantId);
  }
}
