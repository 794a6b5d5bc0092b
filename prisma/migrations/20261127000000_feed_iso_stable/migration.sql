-- ISO 8601 UTC with milliseconds, as the API writes instants. STABLE, as the to_char it wraps is:
-- declared IMMUTABLE (migration 20261125000000), PostgreSQL could not inline it, and each of a
-- change's three calls was a function call of its own (docs/decisions.md#the-feed-is-written-in-the-writing-statement).
CREATE OR REPLACE FUNCTION "grantd_iso"(t TIMESTAMPTZ) RETURNS TEXT LANGUAGE sql STABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
