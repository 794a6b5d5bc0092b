CREATE OR REPLACE FUNCTION "grantd_note_deleted_tenants"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "deleted_tenants" ("tenant_id", "xid")
  SELECT o."id", pg_current_xact_id()::text::bigint FROM old_rows o;
  RETURN NULL;
END $$;
