-- The changes feed's rows of a statement that created, updated or deleted agents
-- (docs/decisions.md#the-feed-is-written-in-the-writing-statement).
CREATE OR REPLACE FUNCTION "grantd_feed_agents"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writing BIGINT := pg_current_xact_id()::text::bigint;
  actor JSONB := "grantd_actor"();
BEGIN
  INSERT INTO "changes" ("tenant_id", "xid", "kind", "op", "data", "actor")
  SELECT c."tenant_id", writing, 'agent', CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END, jsonb_build_object(
      'external_id', c."external_id", 'subject', 'agent:' || c."external_id", 'display_name', c."display_name", 'owner', c."owner",
      'scope', to_jsonb(c."scope"), 'created_at', "grantd_iso"(c."created_at")),
    actor
  FROM changed_rows c
  WHERE TG_OP <> 'DELETE' OR c."tenant_id" IN (SELECT t."id" FROM "tenants" t)
  ORDER BY c."external_id";
  RETURN NULL;
END $$;
