-- ISO 8601 UTC with milliseconds, as the API writes instants. STABLE, as the to_char it wraps is, so
-- that PostgreSQL inlines it (docs/decisions.md#the-feed-is-written-in-the-writing-statement).
CREATE OR REPLACE FUNCTION "grantd_iso"(t TIMESTAMPTZ) RETURNS TEXT LANGUAGE sql STABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
