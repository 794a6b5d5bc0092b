-- An API key as the changes feed shows it: never its digest.
CREATE OR REPLACE FUNCTION "grantd_key_body"(k "api_keys") RETURNS JSONB LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', k."id", 'prefix', k."prefix", 'label', k."label", 'scopes', to_jsonb(k."scopes"),
    'created_at', "grantd_iso"(k."created_at"), 'revoked_at', "grantd_iso"(k."revoked_at"))
$$;
