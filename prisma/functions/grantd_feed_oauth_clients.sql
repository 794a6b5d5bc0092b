-- The changes feed's rows of a statement that created or deleted OAuth clients, in their tenants:
-- a client of no tenant yet (it registered itself) is in no feed.
CREATE OR REPLACE FUNCTION "grantd_feed_oauth_clients"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writing BIGINT := pg_current_xact_id()::text::bigint;
  actor JSONB := "grantd_actor"();
BEGIN
  INSERT INTO "changes" ("tenant_id", "xid", "kind", "op", "data", "actor")
  SELECT c."tenant_id", writing, 'oauth_client', CASE TG_OP WHEN 'INSERT' THEN 'create' ELSE 'delete' END, "grantd_oauth_client_body"(c), actor
  FROM changed_rows c
  WHERE c."tenant_id" IS NOT NULL AND (TG_OP <> 'DELETE' OR c."tenant_id" IN (SELECT t."id" FROM "tenants" t))
  ORDER BY c."client_id";
  RETURN NULL;
END $$;
