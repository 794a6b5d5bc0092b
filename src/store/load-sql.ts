/**
 * The statements that hold a tenant's grants in memory (src/store/held-tenants.ts). A load reads in
 * one snapshot (READ_ONLY_SNAPSHOT_SQL, in graph-sql.ts), on a connection of its own: the horizon
 * (LOAD_HORIZON_SQL), the transactions above it that the snapshot sees (LOAD_SEEN_SQL), the agents
 * (LOAD_AGENTS_SQL), how many grants there are (LOAD_COUNT_SQL), and the grants by COPY
 * (grantsCopySql). A catch-up reads the grant log from its horizon on (GRANT_LOG_SQL), on the pool.
 * The log is written by triggers: prisma/functions/grantd_log_change.sql.
 */

/** The horizon of the load's snapshot in tenant $1 (no row: the tenant is gone). */
export const LOAD_HORIZON_SQL = 'SELECT grantd_xid_horizon()::text FROM tenants WHERE id = $1::uuid';

/** The transactions at or above horizon $2 whose changes to tenant $1 the load's snapshot sees. */
export const LOAD_SEEN_SQL = 'SELECT DISTINCT xid::text FROM grant_changes WHERE tenant_id = $1::uuid AND xid >= $2::bigint';

/** The grants of tenant $1, and those of them with a window: what a load weighs before it reads a grant (from the primary key's index alone). */
export const LOAD_COUNT_SQL =
  'SELECT count(*)::int, (count(*) FILTER (WHERE not_before IS NOT NULL OR expires_at IS NOT NULL))::int FROM grants WHERE tenant_id = $1::uuid';

/** The registered agents of tenant $1 and their scopes. */
export const LOAD_AGENTS_SQL = 'SELECT external_id, scope FROM agents WHERE tenant_id = $1::uuid AND scope IS NOT NULL';

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
