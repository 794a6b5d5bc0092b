-- The changes feed's rows of a statement that updated OAuth clients: a client given its tenant
-- (bound at its first consent) is created in that tenant's feed.
CREATE OR REPLACE FUNCTION "grantd_feed_oauth_clients_updated"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writing BIGINT := pg_current_xact_id()::text::bigint;
  actor JSONB := "grantd_actor"();
BEGIN
  INSERT INTO "changes" ("tenant_id", "xid", "kind", "op", "data", "actor")
  SELECT c."tenant_id", writing, 'oauth_client', CASE WHEN o."tenant_id" IS NULL THEN 'create' ELSE 'update' END, "grantd_oauth_client_body"(c), actor
  FROM changed_rows c JOIN old_rows o ON o."client_id" = c."client_id"
  WHERE c."tenant_id" IS NOT NULL
  ORDER BY c."client_id";
  RETURN NULL;
END $$;
