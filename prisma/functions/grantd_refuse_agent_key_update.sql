-- An agent's key naming another agent would escape the grant log (it names the new key only).
CREATE OR REPLACE FUNCTION "grantd_refuse_agent_key_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'an agent''s tenant and external id are never updated';
END $$;
