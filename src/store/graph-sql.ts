import { MAX_ARROW_DEPTH } from '../engine/grant-index.ts';
import { MEMBER_RELATION } from '../engine/refs.ts';

/** The tenant's compiled namespace tables, passed as JSON parameters and read as row sets. */
const schemaTables = (closureParam: string, arrowsParam: string) => `
  closure AS (SELECT * FROM jsonb_to_recordset(${closureParam}::jsonb) AS x(ns text COLLATE "C", rel text COLLATE "C", implied text COLLATE "C")),
  arrows AS (SELECT * FROM jsonb_to_recordset(${arrowsParam}::jsonb) AS x(ns text COLLATE "C", rel text COLLATE "C", via text COLLATE "C", target text COLLATE "C"))`;

/** Holders of one (object, relation) read in full; past this many, the check probes its own subjects instead. */
export const HOLDERS_READ = 64;

/**
 * Which of a batch of checks ($2: [{i, sns, sid, ons, oid, rel}]) hold in tenant $1 ($3, $4: the schema tables).
 * targets: every (object, relation) whose direct holders satisfy a check, walking includes and
 * arrows backwards from the checked object; subjects: each check's subject and its direct groups.
 * A check holds when a target's holder is one of its subjects. Holders are read per target (one
 * index range each, usually a few rows) and matched in one hash join; a crowded target (an
 * organisation's members, say) is probed for the check's own subjects instead, so its size never
 * matters. Lateral subqueries pin the plan to index probes: the planner cannot see that the JSON
 * inputs are a few rows, and would otherwise hash-join against every grant of the tenant.
 */
export const CHECK_SQL = `
WITH RECURSIVE
  items AS (SELECT * FROM jsonb_to_recordset($2::jsonb)
            AS x(i int, sns text COLLATE "C", sid text COLLATE "C", ons text COLLATE "C", oid text COLLATE "C", rel text COLLATE "C")),
  ${schemaTables('$3', '$4')},
  subjects AS MATERIALIZED (
    SELECT it.i, it.sns AS ns, it.sid AS id FROM items it
    UNION
    SELECT it.i, g.object_ns, g.object_id FROM items it
    CROSS JOIN LATERAL (
      SELECT g.object_ns, g.object_id FROM grants g
      WHERE g.tenant_id = $1::uuid AND g.subject_ns = it.sns AND g.subject_id = it.sid AND g.relation = '${MEMBER_RELATION}'
      OFFSET 0
    ) g
  ),
  targets(i, ns, id, rel, depth) AS (
    SELECT it.i, it.ons, it.oid, COALESCE(c.implied, it.rel), 0
    FROM items it LEFT JOIN closure c ON c.ns = it.ons AND c.rel = it.rel
    UNION
    SELECT t.i, g.subject_ns, g.subject_id, COALESCE(c.implied, a.target), t.depth + 1
    FROM targets t
    JOIN arrows a ON a.ns = t.ns AND a.rel = t.rel
    CROSS JOIN LATERAL (
      SELECT g.subject_ns, g.subject_id FROM grants g
      WHERE g.tenant_id = $1::uuid AND g.object_ns = t.ns AND g.object_id = t.id AND g.relation = a.via
      OFFSET 0
    ) g
    LEFT JOIN closure c ON c.ns = g.subject_ns AND c.rel = a.target
    WHERE t.depth < ${MAX_ARROW_DEPTH}
  ),
  holders AS MATERIALIZED (
    SELECT t.i, t.ns AS object_ns, t.id AS object_id, t.rel, h.subject_ns AS ns, h.subject_id AS id
    FROM targets t
    CROSS JOIN LATERAL (
      SELECT g.subject_ns, g.subject_id FROM grants g
      WHERE g.tenant_id = $1::uuid AND g.object_ns = t.ns AND g.object_id = t.id AND g.relation = t.rel
      LIMIT ${HOLDERS_READ + 1}
    ) h
  ),
  crowded AS (
    SELECT i, object_ns, object_id, rel FROM holders
    GROUP BY i, object_ns, object_id, rel
    HAVING count(*) > ${HOLDERS_READ}
  )
SELECT h.i FROM holders h JOIN subjects s ON s.i = h.i AND s.ns = h.ns AND s.id = h.id
UNION
SELECT c.i FROM crowded c
JOIN subjects s ON s.i = c.i
CROSS JOIN LATERAL (
  SELECT 1 FROM grants g
  WHERE g.tenant_id = $1::uuid AND g.object_ns = c.object_ns AND g.object_id = c.object_id AND g.relation = c.rel
    AND g.subject_ns = s.ns AND g.subject_id = s.id
  LIMIT 1
) hit`;

/**
 * Ids of namespace $6 objects on which subject ($2, $3) holds relation $7 in tenant $1 ($4, $5: the
 * schema tables), ascending, after $8 (null: from the start), at most $9; and how many rows the walk
 * produced, which stops one past budget $10 (the ids are then incomplete and the caller pages otherwise).
 * held: every (object, relation) the subject or its direct groups hold, walking grants forwards:
 * a held relation confers every relation whose closure implies it, and arrows from held objects.
 * A recursive query is evaluated lazily, so the LIMIT in walked stops the walk itself. Grants are
 * read through lateral probes of the by-subject index (the planner otherwise scans by object).
 */
export const REACHABLE_SQL = `
WITH RECURSIVE
  ${schemaTables('$4', '$5')},
  subjects(ns, id) AS MATERIALIZED (
    SELECT $2::text COLLATE "C", $3::text COLLATE "C"
    UNION
    SELECT g.object_ns, g.object_id FROM grants g
    WHERE g.tenant_id = $1::uuid AND g.subject_ns = $2 AND g.subject_id = $3 AND g.relation = '${MEMBER_RELATION}'
  ),
  direct AS MATERIALIZED (
    SELECT g.object_ns AS ns, g.object_id AS id, g.relation AS rel FROM subjects s
    CROSS JOIN LATERAL (
      SELECT g.object_ns, g.object_id, g.relation FROM grants g
      WHERE g.tenant_id = $1::uuid AND g.subject_ns = s.ns AND g.subject_id = s.id
      OFFSET 0
    ) g
  ),
  held(ns, id, rel, depth) AS (
    SELECT d.ns, d.id, d.rel, 0 FROM direct d
    UNION
    SELECT d.ns, d.id, c.rel, 0 FROM direct d JOIN closure c ON c.ns = d.ns AND c.implied = d.rel
    UNION
    SELECT g.object_ns, g.object_id, c.rel, h.depth + 1
    FROM held h
    CROSS JOIN LATERAL (
      SELECT g.object_ns, g.object_id, g.relation FROM grants g
      WHERE g.tenant_id = $1::uuid AND g.subject_ns = h.ns AND g.subject_id = h.id
      OFFSET 0
    ) g
    JOIN arrows a ON a.ns = g.object_ns AND a.via = g.relation AND a.target = h.rel
    JOIN closure c ON c.ns = a.ns AND c.implied = a.rel
    WHERE h.depth < ${MAX_ARROW_DEPTH}
  ),
  walked AS MATERIALIZED (SELECT * FROM held LIMIT $10::int + 1)
SELECT
  (SELECT count(*)::int FROM walked) AS walked,
  ARRAY(
    SELECT DISTINCT id FROM walked
    WHERE ns = $6 AND rel = $7 AND ($8::text IS NULL OR id > $8::text)
    ORDER BY id
    LIMIT $9
  ) AS ids`;

/** Distinct object ids of namespace $2 in tenant $1, ascending, after $3 (null: from the start), at most $4. */
export const OBJECT_IDS_SQL = `
SELECT DISTINCT object_id AS id FROM grants
WHERE tenant_id = $1::uuid AND object_ns = $2 AND ($3::text IS NULL OR object_id > $3::text)
ORDER BY object_id
LIMIT $4`;

/** Scope masks of the registered agents among external ids $2 (text[]) in tenant $1. */
export const AGENT_SCOPES_SQL = `
SELECT external_id, scope FROM agents
WHERE tenant_id = $1::uuid AND external_id = ANY($2::text[])`;
