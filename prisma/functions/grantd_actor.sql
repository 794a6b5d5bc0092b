-- The actor the API named for this transaction (set_config('grantd.actor', <json>, true)), or null:
-- changes made outside the API (the expired-grant sweep, `grantd tenant create`) have none.
CREATE OR REPLACE FUNCTION "grantd_actor"() RETURNS JSONB LANGUAGE sql STABLE AS $$
  SELECT NULLIF(current_setting('grantd.actor', true), '')::jsonb
$$;
