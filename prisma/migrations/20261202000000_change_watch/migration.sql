-- The change watch (src/store/change-watch.ts, docs/decisions.md#a-change-watch-keeps-unchanged-tenants-cached)
-- reads every tenant's changes by the writing transaction, across tenants: an index on xid alone.
-- A tenant's deletion takes its feed with it, so it is noted apart, in a table without a foreign key,
-- by the deleting statement; a row is a few dozen bytes a tenant deleted, and kept.
CREATE INDEX "changes_xid" ON "changes" ("xid");

CREATE TABLE "deleted_tenants" (
  "tenant_id" UUID NOT NULL,
  "xid" BIGINT NOT NULL,
  "at" TIMESTAMPTZ(3) NOT NULL DEFAULT statement_timestamp(),
  CONSTRAINT "deleted_tenants_pkey" PRIMARY KEY ("tenant_id", "xid")
);
CREATE INDEX "deleted_tenants_xid" ON "deleted_tenants" ("xid");

CREATE OR REPLACE FUNCTION "grantd_note_deleted_tenants"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "deleted_tenants" ("tenant_id", "xid")
  SELECT o."id", pg_current_xact_id()::text::bigint FROM old_rows o;
  RETURN NULL;
END $$;

CREATE TRIGGER "tenants_note_deleted" AFTER DELETE ON "tenants"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_note_deleted_tenants"();
