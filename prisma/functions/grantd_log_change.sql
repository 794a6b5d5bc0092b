-- Logs what one statement changed (grants, or the external ids of agents) in the grant log that nodes
-- holding the tenant in memory catch up from (GRANT_LOG_SQL in src/store/graph-sql.ts), and prunes the
-- tenant's log when a checkpoint is due: on a tenant's first write after a checkpoint is 5 minutes old,
-- the rows below the checkpoint's horizon go, and a reader whose horizon is below log_pruned_below
-- reloads the tenant instead.
CREATE OR REPLACE FUNCTION "grantd_log_change"(tenant UUID, grants JSONB, agents TEXT[]) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  prune_below BIGINT;
BEGIN
  -- A tenant deleted in this transaction takes its grants, agents and log with it.
  IF NOT EXISTS (SELECT 1 FROM "tenants" WHERE "id" = tenant) THEN
    RETURN;
  END IF;
  INSERT INTO "grant_changes" ("tenant_id", "xid", "grants", "agents")
  VALUES (tenant, pg_current_xact_id()::text::bigint, grants, agents);
  UPDATE "tenants"
  SET "log_pruned_below" = "log_checkpoint_xid", "log_checkpoint_xid" = "grantd_xid_horizon"(), "log_checkpoint_at" = clock_timestamp()
  WHERE "id" = tenant AND "log_checkpoint_at" < clock_timestamp() - interval '5 minutes'
  RETURNING "log_pruned_below" INTO prune_below;
  IF prune_below IS NOT NULL THEN
    DELETE FROM "grant_changes" WHERE "tenant_id" = tenant AND "xid" < prune_below;
  END IF;
END $$;
