-- grant_changes.added is read by nothing: a reader flips each logged grant (every change flips a
-- grant its statement found in the opposite state) and re-reads each logged agent. The triggers
-- stop writing it, then the column goes.

-- Logs what one statement changed (grants, or the external ids of agents), and prunes the tenant's
-- log when a checkpoint is due.
CREATE FUNCTION "grantd_log_change"(tenant UUID, grants JSONB, agents TEXT[]) RETURNS VOID LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION "grantd_log_changed_grants"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant UUID;
BEGIN
  FOR tenant IN SELECT DISTINCT "tenant_id" FROM changed_rows LOOP
    PERFORM "grantd_log_change"(tenant, (
      SELECT jsonb_agg(jsonb_build_array("subject_ns", "subject_id", "relation", "object_ns", "object_id"))
      FROM changed_rows WHERE "tenant_id" = tenant), NULL);
  END LOOP;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "grantd_log_changed_agents"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant UUID;
BEGIN
  FOR tenant IN SELECT DISTINCT "tenant_id" FROM changed_rows LOOP
    PERFORM "grantd_log_change"(tenant, NULL, (
      SELECT array_agg(DISTINCT "external_id") FROM changed_rows WHERE "tenant_id" = tenant));
  END LOOP;
  RETURN NULL;
END $$;

DROP FUNCTION "grantd_log_change"(UUID, BOOLEAN, JSONB, TEXT[]);

-- AlterTable
ALTER TABLE "grant_changes" DROP COLUMN "added";
