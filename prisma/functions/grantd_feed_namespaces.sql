-- The changes feed's rows of a statement that created, updated or deleted namespaces.
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
