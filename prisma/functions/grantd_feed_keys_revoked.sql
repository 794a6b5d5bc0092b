-- The changes feed's rows of a statement that revoked API keys (revoked_at set once); a key's last use
-- is no change.
CREATE OR REPLACE FUNCTION "grantd_feed_keys_revoked"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writing BIGINT := pg_current_xact_id()::text::bigint;
  actor JSONB := "grantd_actor"();
BEGIN
  INSERT INTO "changes" ("tenant_id", "xid", "kind", "op", "data", "actor")
  SELECT k."tenant_id", writing, 'key', 'delete', "grantd_key_body"(k), actor
  FROM changed_rows k JOIN old_rows o ON o."id" = k."id"
  WHERE o."revoked_at" IS NULL AND k."revoked_at" IS NOT NULL
  ORDER BY k."id";
  RETURN NULL;
END $$;
