-- A tenant's namespace definitions carry a version that every statement changing them bumps, so
-- that a node holding the tenant's compiled schema learns whether it is current from one small
-- read, and compiles (and indexes) a definition once per version rather than at every reload.

-- AlterTable
ALTER TABLE "tenants" ADD COLUMN "namespaces_version" BIGINT NOT NULL DEFAULT 0;

-- One function for the three namespace triggers: each names its transition table changed_rows.
CREATE FUNCTION "grantd_bump_namespaces_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "tenants" SET "namespaces_version" = "namespaces_version" + 1
  WHERE "id" IN (SELECT DISTINCT "tenant_id" FROM changed_rows);
  RETURN NULL;
END $$;

CREATE TRIGGER "namespaces_version_insert" AFTER INSERT ON "namespaces"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_bump_namespaces_version"();
CREATE TRIGGER "namespaces_version_update" AFTER UPDATE ON "namespaces"
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_bump_namespaces_version"();
CREATE TRIGGER "namespaces_version_delete" AFTER DELETE ON "namespaces"
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "grantd_bump_namespaces_version"();
