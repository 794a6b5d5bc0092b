-- The changes feed (GET /v1/changes, docs/consistency.md#the-changes-feed): one row per grant, agent,
-- namespace, API key or OAuth client created, updated or deleted, written by triggers in the writing
-- transaction, so that nothing is half-written and cascades (the agent killswitch's grants and
-- clients) are recorded like any other change. Rows carry the writing transaction's id (64 bits,
-- never wraps) and an order within it; the feed is read in (xid, seq) order, only below the reading
-- snapshot's xmin, so that no transaction can still commit into a range already served.
--
-- The actor is what the API set with set_config('grantd.actor', <json>, true) in the transaction
-- (null for changes made outside the API: the expired-grant sweep, `grantd tenant create`). No
-- secret, nor a digest of one, is ever copied into a row.

-- AlterTable: the last position the retention sweep deleted; an `after` below it is 410 changes-expired.
ALTER TABLE "tenants" ADD COLUMN "changes_pruned_xid" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN "changes_pruned_seq" BIGINT NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "changes" (
    "tenant_id" UUID NOT NULL,
    "xid" BIGINT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT statement_timestamp(),
    "kind" TEXT NOT NULL,
    "op" TEXT NOT NULL,
    "data" JSONB NOT NULL,
    "actor" JSONB,

    CONSTRAINT "changes_pkey" PRIMARY KEY ("tenant_id","xid","seq")
);

-- The retention sweep deletes by age.
CREATE INDEX "changes_at" ON "changes"("at");

-- ISO 8601 UTC with milliseconds, as the API writes instants.
CREATE FUNCTION "grantd_iso"(t TIMESTAMPTZ) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- The actor the API named for this transaction, or null.
CREATE FUNCTION "grantd_actor"() RETURNS JSONB LANGUAGE sql STABLE AS $$
  SELECT NULLIF(current_setting('grantd.actor', true), '')::jsonb
$$;

-- Appends one statement's changes (rows of {tenant_id, data}, in the order given) to the feed,
-- leaving out tenants deleted in this transaction (they take their feed with them).
CREATE FUNCTION "grantd_record_changes"(kind TEXT, op TEXT, rows JSONB) RETURNS VOID LANGUAGE sql AS $$
  INSERT INTO "changes" ("tenant_id", "xid", "kind", "op", "data", "actor")
  SELECT (r ->> 'tenant_id')::uuid, pg_current_xact_id()::text::bigint, kind, op, r -> 'data', "grantd_actor"()
  FROM jsonb_array_elements(rows) WITH ORDINALITY AS e(r, n)
  WHERE EXISTS (SELECT 1 FROM "tenants" t WHERE t."id" = (r ->> 'tenant_id')::uuid)
  ORDER BY n
$$;

CREATE FUNCTION "grantd_feed_grants"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_record_changes"('grant', CASE TG_OP WHEN 'INSERT' THEN 'create' ELSE 'delete' END, (
    SELECT coalesce(jsonb_agg(jsonb_build_object('tenant_id', "tenant_id", 'data', jsonb_build_object(
      'subject', "subject_ns" || ':' || "subject_id", 'relation', "relation", 'object', "object_ns" || ':' || "object_id",
      'created_at', "grantd_iso"("created_at"), 'not_before', "grantd_iso"("not_before"), 'expires_at', "grantd_iso"("expires_at")))
      ORDER BY "object_ns", "object_id", "relation", "subject_ns", "subject_id"), '[]')
    FROM changed_rows));
  RETURN NULL;
END $$;

CREATE TRIGGER "grants_feed_created" AFTER INSERT ON "grants"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_grants"();
CREATE TRIGGER "grants_feed_deleted" AFTER DELETE ON "grants"
REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_grants"();

CREATE FUNCTION "grantd_feed_agents"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_record_changes"('agent', CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END, (
    SELECT coalesce(jsonb_agg(jsonb_build_object('tenant_id', "tenant_id", 'data', jsonb_build_object(
      'external_id', "external_id", 'subject', 'agent:' || "external_id", 'display_name', "display_name", 'owner', "owner",
      'scope', to_jsonb("scope"), 'created_at', "grantd_iso"("created_at"))) ORDER BY "external_id"), '[]')
    FROM changed_rows));
  RETURN NULL;
END $$;

CREATE TRIGGER "agents_feed_created" AFTER INSERT ON "agents"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_agents"();
CREATE TRIGGER "agents_feed_updated" AFTER UPDATE ON "agents"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_agents"();
CREATE TRIGGER "agents_feed_deleted" AFTER DELETE ON "agents"
REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_agents"();

CREATE FUNCTION "grantd_feed_namespaces"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_record_changes"('namespace', CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END, (
    SELECT coalesce(jsonb_agg(jsonb_build_object('tenant_id', "tenant_id", 'data', jsonb_build_object(
      'name', "name", 'relations', "relations", 'created_at', "grantd_iso"("created_at"), 'updated_at', "grantd_iso"("updated_at")))
      ORDER BY "name"), '[]')
    FROM changed_rows));
  RETURN NULL;
END $$;

CREATE TRIGGER "namespaces_feed_created" AFTER INSERT ON "namespaces"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_namespaces"();
CREATE TRIGGER "namespaces_feed_updated" AFTER UPDATE ON "namespaces"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_namespaces"();
CREATE TRIGGER "namespaces_feed_deleted" AFTER DELETE ON "namespaces"
REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_namespaces"();

-- A key is created, then revoked (revoked_at set once); its last use is no change (the update trigger
-- cannot name columns with transition tables, so it compares the rows). Never its digest.
CREATE FUNCTION "grantd_key_body"(k "api_keys") RETURNS JSONB LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', k."id", 'prefix', k."prefix", 'label', k."label", 'scopes', to_jsonb(k."scopes"),
    'created_at', "grantd_iso"(k."created_at"), 'revoked_at', "grantd_iso"(k."revoked_at"))
$$;

CREATE FUNCTION "grantd_feed_keys_created"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_record_changes"('key', 'create', (
    SELECT coalesce(jsonb_agg(jsonb_build_object('tenant_id', k."tenant_id", 'data', "grantd_key_body"(k)) ORDER BY k."id"), '[]')
    FROM changed_rows k));
  RETURN NULL;
END $$;

CREATE FUNCTION "grantd_feed_keys_revoked"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_record_changes"('key', 'delete', (
    SELECT coalesce(jsonb_agg(jsonb_build_object('tenant_id', k."tenant_id", 'data', "grantd_key_body"(k)) ORDER BY k."id"), '[]')
    FROM changed_rows k JOIN old_rows o ON o."id" = k."id"
    WHERE o."revoked_at" IS NULL AND k."revoked_at" IS NOT NULL));
  RETURN NULL;
END $$;

CREATE TRIGGER "api_keys_feed_created" AFTER INSERT ON "api_keys"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_keys_created"();
CREATE TRIGGER "api_keys_feed_revoked" AFTER UPDATE ON "api_keys"
REFERENCING NEW TABLE AS changed_rows OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_keys_revoked"();

-- Never the client's secret digest.
CREATE FUNCTION "grantd_feed_oauth_clients"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_record_changes"('oauth_client', CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END, (
    SELECT coalesce(jsonb_agg(jsonb_build_object('tenant_id', "tenant_id", 'data', jsonb_build_object(
      'client_id', "client_id", 'name', "name", 'type', "type", 'redirect_uris', to_jsonb("redirect_uris"), 'scopes', to_jsonb("scopes"),
      'agent', "agent_external_id", 'created_at', "grantd_iso"("created_at"))) ORDER BY "client_id"), '[]')
    FROM changed_rows));
  RETURN NULL;
END $$;

CREATE TRIGGER "oauth_clients_feed_created" AFTER INSERT ON "oauth_clients"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_oauth_clients"();
CREATE TRIGGER "oauth_clients_feed_updated" AFTER UPDATE ON "oauth_clients"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_oauth_clients"();
CREATE TRIGGER "oauth_clients_feed_deleted" AFTER DELETE ON "oauth_clients"
REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_feed_oauth_clients"();
