import { MAX_ARROW_DEPTH } from '../engine/schema-tables.ts';
import { AGENT_NAMESPACE, MEMBER_RELATION } from '../engine/refs.ts';
import { EVERY_SUBJECT_ID } from '../../contract/schemas.ts';

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
 * Low, since a check reaches few pairs: at 256, reading every grant of a check's groups and
 * matching each level against them cost the database about 40% more a check
 * (docs/measurements.md#2026-11-29-session-30-check_sqls-cpu-on-both-sides-and-the-grants-a-check-reads-in-full-issue-45).
 */
export const HELD_READ = 16;
export const HOLDERS_READ = 64;

/**
 * Which of a batch of checks ($2: [{i, sns, sid, ons, oid, rel}]) hold in tenant $1 ($3, $4: the
 * schema tables): one row (i, outcome) per check allowed ('allowed') or stopped by its budget of
 * steps ('too-many-steps', past $5) or of time ('too-slow', still walking after $6 ms); null for
 * a check denied. The walk is the function grantd_check_walk (prisma/functions/grantd_check_walk.sql):
 * backwards from the checked object, breadth-first, each (object, relation) pair once, at most $8
 * arrows deep (MAX_ARROW_DEPTH for a check; less for a rule's part, which with $9 true is reported
 * 'too-deep' when denied with arrows left: src/engine/rule-check.ts), which a recursive query cannot
 * express; a check's subjects are its subject, the wildcard of its namespace and the groups of
 * either (docs/model.md). One row per check: its outcome (null: denied) and, for an agent subject,
 * its scope (null: not registered), read by the same statement, so that a mask and the grants it
 * masks come from one state of the database.
 * Only grants in force at $7 (the server's clock) confer; every row also carries `until`, the
 * tenant's next window boundary after $7 in epoch ms (null: none), past which no answer may be
 * kept (two probes of partial indexes that hold windowed grants only).
 * The statement is the function grantd_check (prisma/functions/grantd_check.sql), whose plans are
 * made once a connection: written here as a query, it was planned again for every check
 * (docs/decisions.md#the-check-statement-is-planned-once-a-connection).
 */
export const CHECK_SQL = `
SELECT i, outcome, scope, until
FROM grantd_check($1::uuid, $2::jsonb, $3::jsonb, $4::jsonb, $8::int, $5::int, $6::int, ${HELD_READ}, ${HOLDERS_READ}, $7::timestamptz, $9::boolean)`;

/** What CHECK_SQL says of a check it returns a row for. */
export type CheckOutcome = 'allowed' | 'too-many-steps' | 'too-slow' | 'too-deep';

/**
 * Ids of namespace $6 objects on which subject ($2, $3) holds relation $7 in tenant $1 ($4, $5: the
 * schema tables), ascending, after $8 (null: from the start), at most $9; and how many rows the walk
 * produced, which stops one past budget $10 (the ids are then incomplete and the caller pages otherwise);
 * and the subject's scope when it is an agent (null: not registered, or not an agent), from the same snapshot.
 * held: every (object, relation) the subject, the wildcard of its namespace or the direct groups of
 * either hold (docs/model.md; two empty index probes more where no wildcard is granted), walking grants forwards:
 * a held relation confers every relation whose closure implies it, and arrows from held objects.
 * A recursive query is evaluated lazily, so the LIMIT in walked stops the walk itself. Grants are
 * read through lateral probes of the by-subject index (the planner otherwise scans by object), only
 * those in force at $11 (the server's clock).
 */
export const REACHABLE_SQL = `
WITH RECURSIVE
  ${schemaTables('$4', '$5')},
  own(ns, id) AS (
    SELECT $2::text COLLATE "C", $3::text COLLATE "C"
    UNION
    SELECT $2::text COLLATE "C", '${EVERY_SUBJECT_ID}'
  ),
  subjects(ns, id) AS MATERIALIZED (
    SELECT o.ns, o.id FROM own o
    UNION
    SELECT g.object_ns, g.object_id FROM own o
    CROSS JOIN LATERAL (
      SELECT g.object_ns, g.object_id FROM grants g
      WHERE g.tenant_id = $1::uuid AND g.subject_ns = o.ns AND g.subject_id = o.id AND g.relation = '${MEMBER_RELATION}'
        AND ${inForceAt('g', '$11::timestamptz')}
      OFFSET 0
    ) g
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

/**
 * Distinct subject ids of namespace $2 in tenant $1, ascending, after $3 (null: from the start), at most $4; for `agent`, the
 * registered agents too, which may hold through `agent:*` while no grant names them (docs/model.md#public-grants).
 */
export const SUBJECT_IDS_SQL = `
SELECT id FROM (
  SELECT DISTINCT subject_id AS id FROM grants
  WHERE tenant_id = $1::uuid AND subject_ns = $2 AND ($3::text IS NULL OR subject_id > $3::text)
  UNION
  SELECT external_id FROM agents
  WHERE $2 = 'agent' AND tenant_id = $1::uuid AND ($3::text IS NULL OR external_id > $3::text)
) candidates
ORDER BY id
LIMIT $4`;

/**
 * Ids of namespace $5 subjects that hold relation $4 on object ($2, $3) in tenant $1 ($6, $7: the
 * schema tables), themselves or through a group they are a direct member of, ascending, after $8
 * (null: from the start), at most $9; agents ($5 = agent) only when registered with a scope that
 * covers the relation (scopeCovers: the text before an entry's first colon is its namespace, the
 * rest its relation). And how many (object, relation) pairs the walk found, holders and members it
 * read, each stopped one past budget $10 (the ids are then incomplete and the caller pages otherwise);
 * only grants in force at $11 count. The ids are null when `$5:*` is among the holders or the
 * members read: every subject of the namespace then holds (docs/model.md), and the caller checks
 * the candidates one by one instead.
 * pairs: backwards from the object, as a check walks (each pair reached through arrows, at most
 * MAX_ARROW_DEPTH deep); recursive queries are evaluated lazily, so the LIMITs stop the reads.
 */
export const HOLDERS_SQL = `
WITH RECURSIVE
  ${schemaTables('$6', '$7')},
  pairs(ns, id, rel, depth) AS (
    SELECT $2::text COLLATE "C", $3::text COLLATE "C", COALESCE(c.implied, $4::text COLLATE "C"), 0
    FROM (SELECT 1) one LEFT JOIN closure c ON c.ns = $2 AND c.rel = $4
    UNION
    SELECT g.subject_ns, g.subject_id, COALESCE(c.implied, a.target), p.depth + 1
    FROM pairs p
    JOIN arrows a ON a.ns = p.ns AND a.rel = p.rel
    CROSS JOIN LATERAL (
      SELECT g.subject_ns, g.subject_id FROM grants g
      WHERE g.tenant_id = $1::uuid AND g.object_ns = p.ns AND g.object_id = p.id AND g.relation = a.via AND ${inForceAt('g', '$11::timestamptz')}
      OFFSET 0
    ) g
    LEFT JOIN closure c ON c.ns = g.subject_ns AND c.rel = a.target
    WHERE p.depth < ${MAX_ARROW_DEPTH}
  ),
  walked AS MATERIALIZED (SELECT * FROM pairs LIMIT $10::int + 1),
  holders AS MATERIALIZED (
    SELECT DISTINCT g.subject_ns AS ns, g.subject_id AS id FROM (SELECT DISTINCT ns, id, rel FROM walked) p
    CROSS JOIN LATERAL (
      SELECT g.subject_ns, g.subject_id FROM grants g
      WHERE g.tenant_id = $1::uuid AND g.object_ns = p.ns AND g.object_id = p.id AND g.relation = p.rel AND ${inForceAt('g', '$11::timestamptz')}
      LIMIT $10::int + 1
    ) g
    LIMIT $10::int + 1
  ),
  members AS MATERIALIZED (
    SELECT m.subject_id AS id FROM holders h
    CROSS JOIN LATERAL (
      SELECT m.subject_id FROM grants m
      WHERE m.tenant_id = $1::uuid AND m.object_ns = h.ns AND m.object_id = h.id AND m.relation = '${MEMBER_RELATION}' AND m.subject_ns = $5
        AND ${inForceAt('m', '$11::timestamptz')}
      LIMIT $10::int + 1
    ) m
    LIMIT $10::int + 1
  ),
  found AS (SELECT id FROM holders WHERE ns = $5 UNION SELECT id FROM members)
SELECT
  (SELECT count(*)::int FROM walked) + (SELECT count(*)::int FROM holders) + (SELECT count(*)::int FROM members) AS read,
  CASE WHEN EXISTS (SELECT 1 FROM found WHERE id = '${EVERY_SUBJECT_ID}') THEN NULL ELSE ARRAY(
    SELECT f.id FROM found f
    WHERE ($8::text IS NULL OR f.id > $8::text)
      AND ($5 <> '${AGENT_NAMESPACE}' OR EXISTS (
        SELECT 1 FROM agents a, unnest(a.scope) e
        WHERE a.tenant_id = $1::uuid AND a.external_id = f.id AND strpos(e, ':') > 0
          AND left(e, strpos(e, ':') - 1) IN ('*', $2) AND substr(e, strpos(e, ':') + 1) IN ('*', $4)
      ))
    ORDER BY f.id
    LIMIT $9
  ) END AS ids`;

/**
 * The subjects X of grants (X, $4, ($2, $3)) of tenant $1 in force at $5, ordered by (subject_ns,
 * subject_id), at most $6: one range of the primary key.
 */
export const RELATED_SQL = `
SELECT g.subject_ns AS ns, g.subject_id AS id FROM grants g
WHERE g.tenant_id = $1::uuid AND g.object_ns = $2 AND g.object_id = $3 AND g.relation = $4 AND ${inForceAt('g', '$5::timestamptz')}
ORDER BY g.subject_ns, g.subject_id
LIMIT $6`;

/** Explain's reads (src/engine/explain.ts), each in the one snapshot of an explain. A grant row: */
const GRANT_COLUMNS =
  'g.subject_ns AS sns, g.subject_id AS sid, g.relation AS rel, g.object_ns AS ons, g.object_id AS oid, g.not_before AS nb, g.expires_at AS ea';
export const EXPLAIN_SQL = {
  /** The scope of agent $2 in tenant $1 (no row: not registered). */
  agentScope: 'SELECT scope FROM agents WHERE tenant_id = $1::uuid AND external_id = $2',
  /** Whether subject ($2, $3) is the subject of some grant of tenant $1. */
  isSubject: 'SELECT EXISTS (SELECT 1 FROM grants WHERE tenant_id = $1::uuid AND subject_ns = $2 AND subject_id = $3) AS found',
  /** The grants (($2, $3), member, G) of tenant $1. */
  groups: `SELECT ${GRANT_COLUMNS} FROM grants g WHERE g.tenant_id = $1::uuid AND g.subject_ns = $2 AND g.subject_id = $3 AND g.relation = '${MEMBER_RELATION}'`,
  /** The grants (h, rel, (ns, id)) of tenant $1 for each pair of $2 [{ns, id, rel}] whose subject h is one of $3 [{ns, id}]. */
  heldBy: `
SELECT ${GRANT_COLUMNS}
FROM jsonb_to_recordset($2::jsonb) AS p(ns text COLLATE "C", id text COLLATE "C", rel text COLLATE "C")
CROSS JOIN jsonb_to_recordset($3::jsonb) AS h(ns text COLLATE "C", id text COLLATE "C")
JOIN grants g ON g.tenant_id = $1::uuid AND g.object_ns = p.ns AND g.object_id = p.id AND g.relation = p.rel
  AND g.subject_ns = h.ns AND g.subject_id = h.id`,
  /** The grants (X, via, (ns, id)) of tenant $1 for each item of $2 [{ns, id, via}], at most $3. */
  related: `
SELECT ${GRANT_COLUMNS}
FROM jsonb_to_recordset($2::jsonb) AS i(ns text COLLATE "C", id text COLLATE "C", via text COLLATE "C")
JOIN grants g ON g.tenant_id = $1::uuid AND g.object_ns = i.ns AND g.object_id = i.id AND g.relation = i.via
LIMIT $3`,
};

/** A grant as EXPLAIN_SQL reads it. */
export interface ExplainGrantRow {
  sns: string;
  sid: string;
  rel: string;
  ons: string;
  oid: string;
  /** The grant's window, whatever the instant: explain judges it (grantWindow). */
  nb: Date | null;
  ea: Date | null;
}

/** Begins the transaction of statements that must see one state of the database (explain's reads, a load's). */
export const READ_ONLY_SNAPSHOT_SQL = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';
