-- The changes feed's triggers (migration 20261125000000) insert their rows straight from the
-- transition table (docs/decisions.md#the-feed-is-written-in-the-writing-statement): one INSERT ...
-- SELECT a statement, the writing transaction's id and actor read once for the statement, and the
-- tenant's existence tested only on delete (an insert or an update of a tenant's row proves it
-- exists; a tenant deleted in this transaction takes its feed with it). The rows are the same, in the
-- same order, as before; the earlier functions built a JSON array of the rows and expanded it again,
-- which cost a batch write of 100 grants about twice the trigger time.

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

CREATE OR REPLACE FUNCTION "grantd_feed_namespaces"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writing BIGINT := pg_current_xact_id()::text::bigint;
  actor JSONB := "grantd_actor"();
BEGIN
  INSERT INTO "changes" ("tenant_id", "xid", "kind", "op", "data", "actor")
  SELECT c."tenant_id", writing, 'namespace', CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END, jsonb_build_object(
      'name', c."name", 'relations', c."relations", 'created_at', "grantd_iso"(c."created_at"), 'updated_at', "grantd_iso"(c."updated_at")),
    actor
  FROM changed_rows c
  WHERE TG_OP <> 'DELETE' OR c."tenant_id" IN (SELECT t."id" FROM "tenants" t)
  ORDER BY c."name";
  RETURN NULL;
END $$;

-- Keys are created and revoked, never deleted but with their tenant (whose feed goes with it).
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

DROP FUNCTION "grantd_record_changes"(TEXT, TEXT, JSONB);
