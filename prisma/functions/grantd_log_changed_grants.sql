-- Logs the grants a statement added or removed, each [subject_ns, subject_id, relation, object_ns,
-- object_id], and a windowed grant's window after them in epoch milliseconds (null when open). A reader
-- flips each (grant, window) pair, which ends right in any commit order. One function for both grant
-- triggers: each names its transition table changed_rows.
CREATE OR REPLACE FUNCTION "grantd_log_changed_grants"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant UUID;
BEGIN
  FOR tenant IN SELECT DISTINCT "tenant_id" FROM changed_rows LOOP
    PERFORM "grantd_log_change"(tenant, (
      SELECT jsonb_agg(
        CASE WHEN "not_before" IS NULL AND "expires_at" IS NULL
          THEN jsonb_build_array("subject_ns", "subject_id", "relation", "object_ns", "object_id")
          ELSE jsonb_build_array("subject_ns", "subject_id", "relation", "object_ns", "object_id",
            (extract(epoch FROM "not_before") * 1000)::bigint, (extract(epoch FROM "expires_at") * 1000)::bigint)
        END)
      FROM changed_rows WHERE "tenant_id" = tenant), NULL);
  END LOOP;
  RETURN NULL;
END $$;
