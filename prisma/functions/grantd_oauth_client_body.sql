-- An OAuth client as the changes feed shows it: never its secret digest.
CREATE OR REPLACE FUNCTION "grantd_oauth_client_body"(c "oauth_clients") RETURNS JSONB LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'client_id', c."client_id", 'name', c."name", 'type', c."type", 'redirect_uris', to_jsonb(c."redirect_uris"), 'scopes', to_jsonb(c."scopes"),
    'agent', c."agent_external_id", 'registered', c."registered", 'created_at', "grantd_iso"(c."created_at"))
$$;
