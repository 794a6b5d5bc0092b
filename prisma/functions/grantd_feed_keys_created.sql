-- The changes feed's rows of a statement that created API keys. Keys are created and revoked, never
-- deleted but with their tenant (whose feed goes with it).
CREATE OR REPLACE FUNCTION "grantd_feed_keys_created"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writing BIGINT := pg_current_xact_id()::text::bigint;
  actor JSONB := "grantd_actor"();
BEGIN
  INSERT INTO "changes" ("tenant_id", "xid", "kind", "op", "data", "actor")
  SELECT k."tenant_id", writing, 'key', 'create', "grantd_key_body"(k), actor
  FROM changed_rows k
  ORDER BY k."id";
  RETURN NULL;
END $$;
