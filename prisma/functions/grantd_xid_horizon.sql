-- The horizon (docs/consistency.md#the-changes-feed): the oldest transaction running in the statement's
-- snapshot that is not known to belong to another database, else the snapshot's xmax. Every transaction
-- of this database below it had finished when the snapshot was taken, and what it wrote is in what the
-- statement reads. A transaction is known to belong to another database when pg_stat_activity shows a
-- backend of that database running it (or pg_prepared_xacts a transaction prepared there). The list
-- names transactions by their 32-bit id; those running in one snapshot differ in their low 32 bits.
-- PL/pgSQL so that its statement is planned once a connection (a SQL function's body is planned again
-- at every call: about 0.5 ms of the backend's CPU, for the views' joins, against 0.06 ms to run it);
-- STABLE, it reads the calling statement's snapshot as before.
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
