-- Logs the external ids of the agents a statement created, deleted or updated: a reader re-reads their
-- current rows rather than replaying them. One function for the three agent triggers: each names its
-- transition table changed_rows.
CREATE OR REPLACE FUNCTION "grantd_log_changed_agents"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant UUID;
BEGIN
  FOR tenant IN SELECT DISTINCT "tenant_id" FROM changed_rows LOOP
    PERFORM "grantd_log_change"(tenant, NULL, (
      SELECT array_agg(DISTINCT "external_id") FROM changed_rows WHERE "tenant_id" = tenant));
  END LOOP;
  RETURN NULL;
END $$;
