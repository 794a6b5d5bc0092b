-- The changes feed's rows of a statement that created or deleted grants, in the grants' key order
-- (docs/decisions.md#the-feed-is-written-in-the-writing-statement): one INSERT ... SELECT from the
-- transition table, the writing transaction's id and actor read once, the tenant's existence tested only
-- on delete (a tenant deleted in this transaction takes its feed with it).
CREATE OR REPLACE FUNCTION "grantd_feed_grants"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writing BIGINT := pg_current_xact_id()::text::bigint;
  actor JSONB := "grantd_actor"();
BEGIN
  INSERT INTO "changes" ("tenant_id", "xid", "kind", "op", "data", "actor")
  SELECT c."tenant_id", writing, 'grant', CASE TG_OP WHEN 'INSERT' THEN 'create' ELSE 'delete' END, jsonb_build_object(
      'subject', c."subject_ns" || ':' || c."subject_id", 'relation', c."relation", 'object', c."object_ns" || ':' || c."object_id",
      'created_at', "grantd_iso"(c."created_at"), 'not_before', "grantd_iso"(c."not_before"), 'expires_at', "grantd_iso"(c."expires_at")),
    actor
  FROM changed_rows c
  WHERE TG_OP <> 'DELETE' OR c."tenant_id" IN (SELECT t."id" FROM "tenants" t)
  ORDER BY c."object_ns", c."object_id", c."relation", c."subject_ns", c."subject_id";
  RETURN NULL;
END $$;
