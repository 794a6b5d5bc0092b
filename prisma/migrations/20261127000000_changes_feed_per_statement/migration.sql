-- The changes feed records a statement's changes in one row, `items`, rather than one row a change
-- (docs/decisions.md#a-statement-is-one-record-of-the-feed): a batch write of 100 grants adds one
-- heap tuple and one entry in each of the table's two indexes, not a hundred. A change's position
-- stays (xid, seq): a record's changes are at `seq`, `seq` + 1, ... in order, and the sequence now
-- advances 1024 a record so that no two records' positions meet. A statement of more changes than
-- that writes a record for each 1024 of them, in order. Positions already given out stay valid:
-- every existing row becomes a record of its one change, at the same position.

ALTER TABLE "changes" RENAME COLUMN "data" TO "items";
UPDATE "changes" SET "items" = jsonb_build_array("items");
ALTER SEQUENCE "changes_seq_seq" INCREMENT BY 1024;

-- ISO 8601 UTC with milliseconds, as the API writes instants. STABLE, as to_char is: declared
-- IMMUTABLE, PostgreSQL could not inline it, and its calls were most of what building a change cost.
CREATE OR REPLACE FUNCTION "grantd_iso"(t TIMESTAMPTZ) RETURNS TEXT LANGUAGE sql STABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- Appends one statement's changes of one tenant, in order, as records of at most 1024 changes each,
-- with the writing transaction's id and actor. PL/pgSQL, so that its statement's plan is kept.
CREATE FUNCTION "grantd_feed_append"(kind TEXT, op TEXT, tenant UUID, items JSONB[]) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "changes" ("tenant_id", "xid", "seq", "kind", "op", "items", "actor")
  SELECT tenant, pg_current_xact_id()::text::bigint, nextval('changes_seq_seq'), kind, op, to_jsonb(items[first : first + 1023]), "grantd_actor"()
  FROM generate_series(1, cardinality(items), 1024) AS first
  ORDER BY first;
END $$;

-- Each table's trigger hands each tenant's changes to it in the table's key order. Deletes leave out
-- tenants deleted in this transaction (they take their feed with them); inserts and updates prove
-- theirs exists.

CREATE OR REPLACE FUNCTION "grantd_feed_grants"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_feed_append"('grant', CASE TG_OP WHEN 'INSERT' THEN 'create' ELSE 'delete' END, c."tenant_id", array_agg(jsonb_build_object(
      'subject', c."subject_ns" || ':' || c."subject_id", 'relation', c."relation", 'object', c."object_ns" || ':' || c."object_id",
      'created_at', "grantd_iso"(c."created_at"), 'not_before', "grantd_iso"(c."not_before"), 'expires_at', "grantd_iso"(c."expires_at"))
    ORDER BY c."object_ns", c."object_id", c."relation", c."subject_ns", c."subject_id"))
  FROM changed_rows c
  WHERE TG_OP <> 'DELETE' OR c."tenant_id" IN (SELECT t."id" FROM "tenants" t)
  GROUP BY c."tenant_id";
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "grantd_feed_agents"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_feed_append"('agent', CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END, c."tenant_id", array_agg(jsonb_build_object(
      'external_id', c."external_id", 'subject', 'agent:' || c."external_id", 'display_name', c."display_name", 'owner', c."owner",
      'scope', to_jsonb(c."scope"), 'created_at', "grantd_iso"(c."created_at"))
    ORDER BY c."external_id"))
  FROM changed_rows c
  WHERE TG_OP <> 'DELETE' OR c."tenant_id" IN (SELECT t."id" FROM "tenants" t)
  GROUP BY c."tenant_id";
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "grantd_feed_namespaces"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_feed_append"('namespace', CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END, c."tenant_id", array_agg(jsonb_build_object(
      'name', c."name", 'relations', c."relations", 'created_at', "grantd_iso"(c."created_at"), 'updated_at', "grantd_iso"(c."updated_at"))
    ORDER BY c."name"))
  FROM changed_rows c
  WHERE TG_OP <> 'DELETE' OR c."tenant_id" IN (SELECT t."id" FROM "tenants" t)
  GROUP BY c."tenant_id";
  RETURN NULL;
END $$;

-- Keys are created and revoked, never deleted but with their tenant (whose feed goes with it).
CREATE OR REPLACE FUNCTION "grantd_feed_keys_created"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_feed_append"('key', 'create', k."tenant_id", array_agg("grantd_key_body"(k) ORDER BY k."id"))
  FROM changed_rows k
  GROUP BY k."tenant_id";
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "grantd_feed_keys_revoked"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_feed_append"('key', 'delete', k."tenant_id", array_agg("grantd_key_body"(k) ORDER BY k."id"))
  FROM changed_rows k JOIN old_rows o ON o."id" = k."id"
  WHERE o."revoked_at" IS NULL AND k."revoked_at" IS NOT NULL
  GROUP BY k."tenant_id";
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "grantd_feed_oauth_clients"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "grantd_feed_append"('oauth_client', CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END, c."tenant_id", array_agg(jsonb_build_object(
      'client_id', c."client_id", 'name', c."name", 'type', c."type", 'redirect_uris', to_jsonb(c."redirect_uris"), 'scopes', to_jsonb(c."scopes"),
      'agent', c."agent_external_id", 'created_at', "grantd_iso"(c."created_at"))
    ORDER BY c."client_id"))
  FROM changed_rows c
  WHERE TG_OP <> 'DELETE' OR c."tenant_id" IN (SELECT t."id" FROM "tenants" t)
  GROUP BY c."tenant_id";
  RETURN NULL;
END $$;
