-- Dynamic client registration (RFC 7591, docs/oauth.md#dynamic-client-registration): a client that
-- registered itself belongs to no tenant until its first consent binds it, for good, to the
-- signing-in key's tenant. Only such a client may be without a tenant; one never bound is deleted
-- 24 hours after it registered (the partial index serves that sweep).
ALTER TABLE "oauth_clients" ALTER COLUMN "tenant_id" DROP NOT NULL;
ALTER TABLE "oauth_clients" ADD COLUMN "registered" TEXT COLLATE "C" NOT NULL DEFAULT 'admin';
ALTER TABLE "oauth_clients" ADD CONSTRAINT "oauth_clients_registered" CHECK ("registered" IN ('admin', 'dynamic'));
ALTER TABLE "oauth_clients" ADD CONSTRAINT "oauth_clients_unbound_dynamic"
  CHECK ("tenant_id" IS NOT NULL OR ("registered" = 'dynamic' AND "type" = 'public' AND "agent_external_id" IS NULL));
CREATE INDEX "oauth_clients_unbound" ON "oauth_clients" ("created_at") WHERE "tenant_id" IS NULL;

-- The feed is a tenant's: an unbound client is in none, so its registration and its sweep write
-- nothing; its binding is its creation in the tenant it joins. Every change shows `registered`.
CREATE FUNCTION "grantd_oauth_client_body"(c "oauth_clients") RETURNS JSONB LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'client_id', c."client_id", 'name', c."name", 'type', c."type", 'redirect_uris', to_jsonb(c."redirect_uris"), 'scopes', to_jsonb(c."scopes"),
    'agent', c."agent_external_id", 'registered', c."registered", 'created_at', "grantd_iso"(c."created_at"))
$$;

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

-- An update is a binding (a create in the tenant it joins) when the row had no tenant before.
CREATE FUNCTION "grantd_feed_oauth_clients_updated"() RETURNS trigger LANGUAGE plpgsql AS $$
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

DROP TRIGGER "oauth_clients_feed_updated" ON "oauth_clients";
CREATE TRIGGER "oauth_clients_feed_updated" AFTER UPDATE ON "oauth_clients"
REFERENCING NEW TABLE AS changed_rows OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_oauth_clients_updated"();
