-- The changes feed's rows of a statement that created, updated or deleted OAuth clients: never the
-- client's secret digest.
CREATE OR REPLACE FUNCTION "grantd_feed_oauth_clients"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writing BIGINT := pg_current_xact_id()::text::bigint;
  actor JSONB := "grantd_actor"();
BEGIN
  INSERT INTO "changes" ("tenant_id", "xid", "kind", "op", "data", "actor")
  SELECT c."tenant_id", writing, 'oauth_client', CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END, jsonb_build_object(
      'client_id', c."client_id", 'name', c."name", 'type', c."type", 'redirect_uris', to_jsonb(c."redirect_uris"), 'scopes', to_jsonb(c."scopes"),
      'agent', c."agent_external_id", 'created_at', "grantd_iso"(c."created_at")),
    actor
  FROM changed_rows c
  WHERE TG_OP <> 'DELETE' OR c."tenant_id" IN (SELECT t."id" FROM "tenants" t)
  ORDER BY c."client_id";
  RETURN NULL;
END $$;
