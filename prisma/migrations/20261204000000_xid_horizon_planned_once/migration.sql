-- The horizon's function in PL/pgSQL, its statement planned once a connection: as a SQL function its
-- body (pg_stat_activity's and pg_prepared_xacts' joins) was planned again at every call, about 0.5 ms
-- of the backend's CPU against 0.06 ms to run it, paid by every load, catch-up and page of the feed.
-- It reads the calling statement's snapshot as before (STABLE).
CREATE OR REPLACE FUNCTION "grantd_xid_horizon"() RETURNS BIGINT LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (
    SELECT coalesce(min(x::text::bigint), pg_snapshot_xmax(pg_current_snapshot())::text::bigint)
    FROM pg_snapshot_xip(pg_current_snapshot()) AS x
    WHERE (x::text::bigint % 4294967296)::text::xid NOT IN (
      SELECT a.backend_xid FROM pg_stat_activity a WHERE a.datname <> current_database() AND a.backend_xid IS NOT NULL
      UNION ALL
      SELECT p.transaction FROM pg_prepared_xacts p WHERE p.database <> current_database()));
END
$$;
