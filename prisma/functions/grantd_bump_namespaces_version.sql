-- Bumps the version of the namespace definitions of every tenant a statement changed them for, so
-- that a node holding a tenant's compiled schema learns whether it is current from one small read. One
-- function for the three namespace triggers: each names its transition table changed_rows.
CREATE OR REPLACE FUNCTION "grantd_bump_namespaces_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "tenants" SET "namespaces_version" = "namespaces_version" + 1
  WHERE "id" IN (SELECT DISTINCT "tenant_id" FROM changed_rows);
  RETURN NULL;
END $$;
