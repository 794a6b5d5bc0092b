/**
 * The statements that hold a tenant's grants in memory (src/store/held-tenants.ts). A load reads in
 * one snapshot (READ_ONLY_SNAPSHOT_SQL, in graph-sql.ts), on a connection of the loads' own: what it
 * needs before the grants (LOAD_HEAD_SQL), then the grants by COPY (grantsCopySql). A catch-up reads
 * the grant log from its horizon on (GRANT_LOG_SQL), on the pool. The log is written by triggers:
 * prisma/functions/grantd_log_change.sql.
 */

/**
 * What a load reads of tenant $1 before its grants, in one round trip of its snapshot (no row: the
 * tenant is gone): the horizon; the transactions at or above it whose changes to the tenant the
 * snapshot sees; the registered agents and their scopes (JSON pairs); how many grants there are, and
 * how many of them have a window (from the primary key's index alone), which is what the load weighs
 * before it reads a grant. The horizon is computed once (MATERIALIZED) and the rest read against it.
 */
export const LOAD_HEAD_SQL = `
WITH h AS MATERIALIZED (SELECT grantd_xid_horizon() AS horizon FROM tenants WHERE id = $1::uuid)
SELECT h.horizon::text,
  ARRAY(SELECT DISTINCT c.xid::text FROM grant_changes c WHERE c.tenant_id = $1::uuid AND c.xid >= h.horizon),
  (SELECT coalesce(json_agg(json_build_array(a.external_id, a.scope)), '[]') FROM agents a WHERE a.tenant_id = $1::uuid AND a.scope IS NOT NULL),
  n.grants, n.windowed
FROM h CROSS JOIN LATERAL (
  SELECT count(*)::int AS grants, (count(*) FILTER (WHERE g.not_before IS NOT NULL OR g.expires_at IS NOT NULL))::int AS windowed
  FROM grants g WHERE g.tenant_id = $1::uuid) n`;

/** A row of LOAD_HEAD_SQL. */
export type LoadHead = [horizon: string, seen: string[], agents: [string, string[]][], grants: number, windowed: number];

/**
 * The statement copying out the grants of `tenantLiteral` (a quoted literal: COPY takes no
 * parameters), in the columns of CopiedGrant (src/store/grant-copy.ts). An absent bound is an empty
 * field, which no id can be (ids have a character at least).
 */
export const grantsCopySql = (tenantLiteral: string): string => `COPY (
  SELECT subject_ns, subject_id, relation, object_ns, object_id,
    (extract(epoch FROM not_before) * 1000)::float8, (extract(epoch FROM expires_at) * 1000)::float8
  FROM grants WHERE tenant_id = ${tenantLiteral}::uuid
) TO STDOUT WITH (FORMAT text, NULL '')`;

/** The log of tenant $1 from horizon $2 on, but the transactions in $3, at most $4 rows; see LogRow. */
export const GRANT_LOG_SQL = `
SELECT grantd_xid_horizon()::text, t.log_pruned_below::text, c.xid::text, c.grants, c.agents,
  (SELECT jsonb_object_agg(a.external_id, a.scope) FROM agents a
   WHERE a.tenant_id = t.id AND a.external_id = ANY(c.agents) AND a.scope IS NOT NULL)
FROM tenants t
LEFT JOIN grant_changes c ON c.tenant_id = t.id AND c.xid >= $2::bigint AND NOT (c.xid = ANY($3::bigint[]))
WHERE t.id = $1::uuid
ORDER BY c.xid, c.id
LIMIT $4`;

/**
 * A row of GRANT_LOG_SQL: the horizon now and the tenant's log_pruned_below on every row (no row:
 * the tenant is gone), then one row per logged statement not yet replayed (xid null when there is
 * none), with the grants it flipped or the agents it changed, and those agents' scopes now (absent:
 * the agent is gone).
 */
export type LogRow = [
  horizon: string,
  prunedBelow: string,
  xid: string | null,
  grants: LoggedGrant[] | null,
  agents: string[] | null,
  scopes: Record<string, string[]> | null,
];

/** A grant as the log (grant_changes) records it, and its window's bounds in epoch ms (null or absent: open) when it has one. */
export type LoggedGrant = [
  subjectNs: string,
  subjectId: string,
  relation: string,
  objectNs: string,
  objectId: string,
  notBefore?: number | null,
  expiresAt?: number | null,
];
