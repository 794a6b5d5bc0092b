-- Agents join the log of grant changes (migration 20261122100000), so that nodes holding a tenant's
-- grants in memory also hold its agents' scope masks and answer agent checks without a round trip.
-- An agent row names only the agents a statement created, deleted or updated: a reader re-reads
-- their current rows rather than replaying them, because unlike grant flips, rows written by
-- different transactions do not end the same whatever the order they are replayed in.

-- AlterTable
ALTER TABLE "grant_changes" ALTER COLUMN "grants" DROP NOT NULL,
ADD COLUMN "agents" TEXT[],
ADD CONSTRAINT "grant_changes_grants_or_agents" CHECK (("grants" IS NULL) <> ("agents" IS NULL));

-- Logs what one statement changed (grants, or the external ids of agents), and prunes the tenant's
-- log when a checkpoint is due (as grantd_log_grants did for grants alone).
CREATE FUNCTION "grantd_log_change"(tenant UUID, added BOOLEAN, grants JSONB, agents TEXT[]) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  prune_below BIGINT;
BEGIN
  -- A tenant deleted in this transaction takes its grants, agents and log with it.
  IF NOT EXISTS (SELECT 1 FROM "tenants" WHERE "id" = tenant) THEN
    RETURN;
  END IF;
  INSERT INTO "grant_changes" ("tenant_id", "xid", "added", "grants", "agents")
  VALUES (tenant, pg_current_xact_id()::text::bigint, added, grants, agents);
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
    PERFORM "grantd_log_change"(tenant, TG_OP = 'INSERT', (
      SELECT jsonb_agg(jsonb_build_array("subject_ns", "subject_id", "relation", "object_ns", "object_id"))
      FROM changed_rows WHERE "tenant_id" = tenant), NULL);
  END LOOP;
  RETURN NULL;
END $$;

DROP FUNCTION "grantd_log_grants"(UUID, BOOLEAN, JSONB);

-- One function for the three agent triggers: each names its transition table changed_rows.
CREATE FUNCTION "grantd_log_changed_agents"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant UUID;
BEGIN
  FOR tenant IN SELECT DISTINCT "tenant_id" FROM changed_rows LOOP
    PERFORM "grantd_log_change"(tenant, TG_OP <> 'DELETE', NULL, (
      SELECT array_agg(DISTINCT "external_id") FROM changed_rows WHERE "tenant_id" = tenant));
  END LOOP;
  RETURN NULL;
END $$;

CREATE TRIGGER "agents_log_added" AFTER INSERT ON "agents"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_log_changed_agents"();

CREATE TRIGGER "agents_log_removed" AFTER DELETE ON "agents"
REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_log_changed_agents"();

-- grantd never updates an agent, but an operator may change a scope by hand: that is logged too.
CREATE TRIGGER "agents_log_updated" AFTER UPDATE ON "agents"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_log_changed_agents"();

-- An agent's key naming another agent would escape the log (it names the new key only).
CREATE FUNCTION "grantd_refuse_agent_key_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'an agent''s tenant and external id are never updated';
END $$;

CREATE TRIGGER "agents_refuse_key_update"
BEFORE UPDATE OF "tenant_id", "external_id" ON "agents"
FOR EACH ROW EXECUTE FUNCTION "grantd_refuse_agent_key_update"();
