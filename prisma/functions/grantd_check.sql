-- The statement behind checks that PostgreSQL answers (CHECK_SQL in src/store/graph-sql.ts): the walk
-- of a batch of checks (grantd_check_walk), one row per check with its outcome (null: denied), its
-- agent subject's scope (null: not an agent, or not registered) and the tenant's next window boundary
-- after walk_at in epoch ms (null: none), all read in the calling statement's snapshot (STABLE), so
-- that a mask and the grants it masks come from one state of the database. A function so that its
-- plan is made once a connection: as a prepared statement of its own PostgreSQL planned it again for
-- every check (a custom plan each time, about 0.5 ms of the backend's CPU, as long as the walk of a
-- typical check: docs/decisions.md#the-check-statement-is-planned-once-a-connection). The agent's
-- scope is one probe of the agents' primary key, not a scan of the tenant's agents.
CREATE OR REPLACE FUNCTION "grantd_check"(
  tenant UUID,
  -- The checks: [{i, sns, sid, ons, oid, rel}].
  items JSONB,
  closure JSONB,
  arrows JSONB,
  max_depth INT,
  max_steps INT,
  max_ms INT,
  held_read INT,
  holders_read INT,
  walk_at TIMESTAMPTZ,
  report_too_deep BOOLEAN
) RETURNS TABLE (i INT, outcome TEXT, scope TEXT[], until FLOAT8)
LANGUAGE plpgsql STABLE SET jit = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  WITH walk AS (
    SELECT w.check_index, w.outcome
    FROM grantd_check_walk(tenant, items, closure, arrows, max_depth, max_steps, max_ms, held_read, holders_read, walk_at, report_too_deep) w
  ),
  boundary AS (
    SELECT (extract(epoch FROM LEAST(
      (SELECT min(g.not_before) FROM "grants" g WHERE g.tenant_id = tenant AND g.not_before > walk_at),
      (SELECT min(g.expires_at) FROM "grants" g WHERE g.tenant_id = tenant AND g.expires_at > walk_at)
    )) * 1000)::FLOAT8 AS until
  )
  SELECT c.i, w.outcome, a.scope, b.until
  FROM jsonb_to_recordset(items) AS c(i INT, sns TEXT, sid TEXT)
  CROSS JOIN boundary b
  LEFT JOIN walk w ON w.check_index = c.i
  LEFT JOIN LATERAL (
    SELECT a.scope FROM "agents" a WHERE c.sns = 'agent' AND a.tenant_id = tenant AND a.external_id = c.sid
  ) a ON TRUE;
END $$;
