import { MAX_ARROW_DEPTH } from '../engine/grant-index.ts';
import { AGENT_NAMESPACE, MEMBER_RELATION } from '../engine/refs.ts';

/** The tenant's compiled namespace tables, passed as JSON parameters and read as row sets. */
const schemaTables = (closureParam: string, arrowsParam: string) => `
  closure AS (SELECT * FROM jsonb_to_recordset(${closureParam}::jsonb) AS x(ns text COLLATE "C", rel text COLLATE "C", implied text COLLATE "C")),
  arrows AS (SELECT * FROM jsonb_to_recordset(${arrowsParam}::jsonb) AS x(ns text COLLATE "C", rel text COLLATE "C", via text COLLATE "C", target text COLLATE "C"))`;

/** The grant `alias` is in force at the instant `param` (docs/model.md#time-bound-grants). */
const inForceAt = (alias: string, param: string) =>
  `(${alias}.not_before IS NULL OR ${alias}.not_before <= ${param}) AND (${alias}.expires_at IS NULL OR ${alias}.expires_at > ${param})`;

/**
 * Grants of one subject read in full; past this many, the check reads the holders of the pairs it
 * reaches instead: up to HOLDERS_READ a pair, past which it probes the pair for its own subjects.
 */
export const HELD_READ = 256;
export const HOLDERS_READ = 64;

/**
 * Which of a batch of checks ($2: [{i, sns, sid, ons, oid, rel}]) hold in tenant $1 ($3, $4: the
 * schema tables): one row (i, outcome) per check allowed ('allowed') or stopped by its budget of
 * steps ('too-many-steps', past $5) or of time ('too-slow', still walking after $6 ms); no row for
 * a check denied. The walk is the function grantd_check_walk (migrations 20261123100000, 20261124000000): backwards
 * from the checked object, breadth-first, each (object, relation) pair once, at most
 * MAX_ARROW_DEPTH arrows deep, which a recursive query cannot express. One row per check: its
 * outcome (null: denied) and, for an agent subject, its scope (null: not registered), read by the
 * same statement, so that a mask and the grants it masks come from one state of the database.
 * Only grants in force at $7 (the server's clock) confer; every row also carries `until`, the
 * tenant's next window boundary after $7 in epoch ms (null: none), past which no answer may be
 * kept (two probes of partial indexes that hold windowed grants only).
 */
export const CHECK_SQL = `
WITH walk AS (
  SELECT check_index, outcome
  FROM grantd_check_walk($1::uuid, $2::jsonb, $3::jsonb, $4::jsonb, ${MAX_ARROW_DEPTH}, $5::int, $6::int, ${HELD_READ}, ${HOLDERS_READ}, $7::timestamptz)
),
boundary AS (
  SELECT (extract(epoch FROM LEAST(
    (SELECT min(g.not_before) FROM grants g WHERE g.tenant_id = $1::uuid AND g.not_before > $7::timestamptz),
    (SELECT min(g.expires_at) FROM grants g WHERE g.tenant_id = $1::uuid AND g.expires_at > $7::timestamptz)
  )) * 1000)::float8 AS until
)
SELECT c.i, w.outcome, a.scope, b.until
FROM jsonb_to_recordset($2::jsonb) AS c(i int, sns text, sid text)
CROSS JOIN boundary b
LEFT JOIN walk w ON w.check_index = c.i
LEFT JOIN agents a ON c.sns = '${AGENT_NAMESPACE}' AND a.tenant_id = $1::uuid AND a.external_id = c.sid`;

/** What CHECK_SQL says of a check it returns a row for. */
export type CheckOutcome = 'allowed' | 'too-many-steps' | 'too-slow';

/**
 * Ids of namespace $6 objects on which subject ($2, $3) holds relation $7 in tenant $1 ($4, $5: the
 * schema tables), ascending, after $8 (null: from the start), at most $9; and how many rows the walk
 * produced, which stops one past budget $10 (the ids are then incomplete and the caller pages otherwise);
 * and the subject's scope when it is an agent (null: not registered, or not an agent), from the same snapshot.
 * held: every (object, relation) the subject or its direct groups hold, walking grants forwards:
 * a held relation confers every relation whose closure implies it, and arrows from held objects.
 * A recursive query is evaluated lazily, so the LIMIT in walked stops the walk itself. Grants are
 * read through lateral probes of the by-subject index (the planner otherwise scans by object), only
 * those in force at $11 (the server's clock).
 */
export const REACHABLE_SQL = `
WITH RECURSIVE
  ${schemaTables('$4', '$5')},
  subjects(ns, id) AS MATERIALIZED (
    SELECT $2::text COLLATE "C", $3::text COLLATE "C"
    UNION
    SELECT g.object_ns, g.object_id FROM grants g
    WHERE g.tenant_id = $1::uuid AND g.subject_ns = $2 AND g.subject_id = $3 AND g.relation = '${MEMBER_RELATION}'
      AND ${inForceAt('g', '$11::timestamptz')}
  ),
  direct AS MATERIALIZED (
    SELECT g.object_ns AS ns, g.object_id AS id, g.relation AS rel FROM subjects s
    CROSS JOIN LATERAL (
      SELECT g.object_ns, g.object_id, g.relation FROM grants g
      WHERE g.tenant_id = $1::uuid AND g.subject_ns = s.ns AND g.subject_id = s.id AND ${inForceAt('g', '$11::timestamptz')}
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
      WHERE g.tenant_id = $1::uuid AND g.subject_ns = h.ns AND g.subject_id = h.id AND ${inForceAt('g', '$11::timestamptz')}
      OFFSET 0
    ) g
    JOIN arrows a ON a.ns = g.object_ns AND a.via = g.relation AND a.target = h.rel
    JOIN closure c ON c.ns = a.ns AND c.implied = a.rel
    WHERE h.depth < ${MAX_ARROW_DEPTH}
  ),
  walked AS MATERIALIZED (SELECT * FROM held LIMIT $10::int + 1)
SELECT
  (SELECT a.scope FROM agents a WHERE a.tenant_id = $1::uuid AND $2 = '${AGENT_NAMESPACE}' AND a.external_id = $3) AS scope,
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
