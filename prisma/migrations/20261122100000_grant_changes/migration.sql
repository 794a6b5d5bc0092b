-- A log of every grant added or removed, so that nodes holding a tenant's grants in memory catch
-- up with one small query instead of reloading. Triggers write it, so every path that changes grants
-- (batch writes, revokes, the agent killswitch) is logged in the writing transaction, one row per
-- statement ([[subject_ns, subject_id, relation, object_ns, object_id], ...]) under the transaction's
-- id (pg_current_xact_id, 64 bits: never wraps). Writers take no lock for it.
--
-- A reader remembers the oldest transaction still running when it last read (its horizon): every
-- transaction below that had finished, so what the reader has not seen yet is at or above it.
-- Transactions commit in any order, but every change a reader replays flips a grant that the
-- change's own statement found in the opposite state, so replaying them in any order ends right.
--
-- The log keeps what finished more than 5 minutes ago for at least 5 more: on a tenant's first
-- write after a checkpoint is 5 minutes old, the rows below the checkpoint's horizon go, and a
-- reader whose horizon is below log_pruned_below reloads the tenant instead.

-- AlterTable
ALTER TABLE "tenants" ADD COLUMN "log_pruned_below" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN "log_checkpoint_xid" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN "log_checkpoint_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- CreateTable
CREATE TABLE "grant_changes" (
    "tenant_id" UUID NOT NULL,
    "xid" BIGINT NOT NULL,
    "id" BIGSERIAL NOT NULL,
    "added" BOOLEAN NOT NULL,
    "grants" JSONB NOT NULL,

    CONSTRAINT "grant_changes_pkey" PRIMARY KEY ("tenant_id","xid","id")
);

-- The oldest transaction still running, as a bigint (every one below it has finished).
CREATE FUNCTION "grantd_xid_horizon"() RETURNS BIGINT LANGUAGE sql STABLE AS $$
  SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint
$$;

-- Logs the grants a statement added or removed, and prunes the tenant's log when a checkpoint is due.
CREATE FUNCTION "grantd_log_grants"(tenant UUID, added BOOLEAN, grants JSONB) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  prune_below BIGINT;
BEGIN
  -- A tenant deleted in this transaction takes its grants and log with it.
  IF NOT EXISTS (SELECT 1 FROM "tenants" WHERE "id" = tenant) THEN
    RETURN;
  END IF;
  INSERT INTO "grant_changes" ("tenant_id", "xid", "added", "grants")
  VALUES (tenant, pg_current_xact_id()::text::bigint, added, grants);
  UPDATE "tenants"
  SET "log_pruned_below" = "log_checkpoint_xid", "log_checkpoint_xid" = "grantd_xid_horizon"(), "log_checkpoint_at" = clock_timestamp()
  WHERE "id" = tenant AND "log_checkpoint_at" < clock_timestamp() - interval '5 minutes'
  RETURNING "log_pruned_below" INTO prune_below;
  IF prune_below IS NOT NULL THEN
    DELETE FROM "grant_changes" WHERE "tenant_id" = tenant AND "xid" < prune_below;
  END IF;
END $$;

-- One function for both triggers: each names its transition table changed_rows.
CREATE FUNCTION "grantd_log_changed_grants"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant UUID;
BEGIN
  FOR tenant IN SELECT DISTINCT "tenant_id" FROM changed_rows LOOP
    PERFORM "grantd_log_grants"(tenant, TG_OP = 'INSERT', (
      SELECT jsonb_agg(jsonb_build_array("subject_ns", "subject_id", "relation", "object_ns", "object_id"))
      FROM changed_rows WHERE "tenant_id" = tenant));
  END LOOP;
  RETURN NULL;
END $$;

CREATE TRIGGER "grants_log_added" AFTER INSERT ON "grants"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_log_changed_grants"();

CREATE TRIGGER "grants_log_removed" AFTER DELETE ON "grants"
REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_log_changed_grants"();

-- Every column of a grant but created_at is part of its key: a change of key would escape the log.
CREATE FUNCTION "grantd_refuse_grant_key_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'grants are added and removed, never updated';
END $$;

CREATE TRIGGER "grants_refuse_key_update"
BEFORE UPDATE OF "tenant_id", "object_ns", "object_id", "relation", "subject_ns", "subject_id" ON "grants"
FOR EACH ROW EXECUTE FUNCTION "grantd_refuse_grant_key_update"();
