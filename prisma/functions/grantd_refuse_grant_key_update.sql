-- Grants are added and removed, never updated: a change of key or window in place would escape the
-- grant log.
CREATE OR REPLACE FUNCTION "grantd_refuse_grant_key_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'grants are added and removed, never updated';
END $$;
