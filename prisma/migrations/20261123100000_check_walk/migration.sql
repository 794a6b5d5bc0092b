-- The walk behind checks that PostgreSQL answers. It goes backwards from each checked object
-- breadth-first, each (object, relation) pair once, at the fewest arrows that reach it, and follows
-- at most max_depth arrows in a chain: exactly the walk over grants held in memory. A recursive
-- query cannot walk that way: UNION removes whole duplicate rows, so a depth column in them had
-- every pair of a cyclic graph expanded again at each of the 17 depths.
--
-- Level by level, for a batch of checks at once: the pairs reached at the current depth (the
-- frontier) are matched against each check's subjects (its subject and the groups it is a direct
-- member of); a check they match is allowed and walks no further; the others go one arrow further,
-- to the pairs not yet visited. A check's steps are its subject's groups, the pairs of each level
-- it expands and the grants read from them through arrows (once per pair and arrow relation), as
-- the walk in memory counts them; a check past max_steps once a level is expanded stops and is
-- reported too complex. A subject that holds no grant is denied without a walk, as in memory. So is every check still walking once max_ms have passed
-- (looked at between levels, so that a heavy check stops before its statement is cancelled and the
-- lighter checks batched with it are still answered). STABLE: each statement reads the calling
-- statement's snapshot, so the walk sees one state of the grants.
--
-- Pairs are kept in parallel arrays (a STABLE function writes no table); sets are compared with
-- EXCEPT and INTERSECT, which hash, whatever row counts the planner guesses for the arrays.
CREATE FUNCTION "grantd_check_walk"(
  tenant UUID,
  -- The checks: [{i, sns, sid, ons, oid, rel}].
  items JSONB,
  -- The tenant's compiled namespaces: [{ns, rel, implied}] and [{ns, rel, via, target}].
  closure JSONB,
  arrows JSONB,
  max_depth INT,
  max_steps INT,
  max_ms INT,
  -- Grants of a check's subject (or a group) read in full; a check whose subjects hold more has the
  -- holders of each pair it reaches read instead, up to holders_read a pair, past which the pair is
  -- probed for the check's own subjects.
  held_read INT,
  holders_read INT
) RETURNS TABLE (check_index INT, outcome TEXT) -- allowed, too-many-steps or too-slow; no row: denied
-- No JIT: the planner's guesses for the arrays put a level's statements past jit_above_cost, and
-- compiling them took ~55 ms, more than the walk of a dense graph.
LANGUAGE plpgsql STABLE SET jit = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  started TIMESTAMPTZ := clock_timestamp();
  depth INT := 0;
  -- Each check's subjects.
  s_i INT[];
  s_ns TEXT[] COLLATE "C";
  s_id TEXT[] COLLATE "C";
  -- The pairs the subjects of each check hold directly, for checks whose subjects hold few grants;
  -- the others are busy.
  h_i INT[];
  h_ns TEXT[] COLLATE "C";
  h_id TEXT[] COLLATE "C";
  h_rel TEXT[] COLLATE "C";
  busy INT[];
  -- The pairs every check has visited, and the frontier.
  v_i INT[];
  v_ns TEXT[] COLLATE "C";
  v_id TEXT[] COLLATE "C";
  v_rel TEXT[] COLLATE "C";
  f_i INT[];
  f_ns TEXT[] COLLATE "C";
  f_id TEXT[] COLLATE "C";
  f_rel TEXT[] COLLATE "C";
  -- Steps taken per check, at index i + 1; and the grants read by the checks of r_i at the last level.
  steps INT[] := '{}';
  r_i INT[];
  r_n INT[];
  -- The checks that expand the current level.
  walking INT[];
  -- The probes of a level, (check, object, via) with the relations the arrows lead to (joined by
  -- commas: names cannot hold one) and how many of the check's pairs read through it; a part of
  -- them read at a time, and what the parts reached.
  p_i INT[];
  p_ns TEXT[] COLLATE "C";
  p_id TEXT[] COLLATE "C";
  p_via TEXT[] COLLATE "C";
  p_targets TEXT[];
  p_pairs INT[];
  n_probes INT;
  part INT;
  pos INT;
  c_i INT[];
  c_ns TEXT[] COLLATE "C";
  c_id TEXT[] COLLATE "C";
  c_targets TEXT[];
  rc_i INT[];
  rc_ns TEXT[] COLLATE "C";
  rc_id TEXT[] COLLATE "C";
  rc_targets TEXT[];
  allowed INT[];
  stopped INT[];
  walker RECORD;
BEGIN
  SELECT array_agg(x.i), array_agg(x.ns), array_agg(x.id) INTO s_i, s_ns, s_id
  FROM (
    SELECT c.i, c.sns AS ns, c.sid AS id
    FROM jsonb_to_recordset(items) AS c(i INT, sns TEXT COLLATE "C", sid TEXT COLLATE "C")
    UNION
    SELECT c.i, g.object_ns, g.object_id
    FROM jsonb_to_recordset(items) AS c(i INT, sns TEXT COLLATE "C", sid TEXT COLLATE "C")
    CROSS JOIN LATERAL (
      SELECT g.object_ns, g.object_id FROM "grants" g
      WHERE g.tenant_id = tenant AND g.subject_ns = c.sns AND g.subject_id = c.sid AND g.relation = 'member'
      OFFSET 0
    ) g
  ) x;

  SELECT array_agg(DISTINCT x.i) INTO busy
  FROM unnest(s_i, s_ns, s_id) AS x(i, ns, id)
  CROSS JOIN LATERAL (
    SELECT count(*) AS n FROM (
      SELECT 1 FROM "grants" g WHERE g.tenant_id = tenant AND g.subject_ns = x.ns AND g.subject_id = x.id LIMIT held_read + 1
    ) g
  ) held
  WHERE held.n > held_read;
  SELECT array_agg(x.i), array_agg(g.object_ns), array_agg(g.object_id), array_agg(g.relation) INTO h_i, h_ns, h_id, h_rel
  FROM unnest(s_i, s_ns, s_id) AS x(i, ns, id)
  CROSS JOIN LATERAL (
    SELECT g.object_ns, g.object_id, g.relation FROM "grants" g
    WHERE g.tenant_id = tenant AND g.subject_ns = x.ns AND g.subject_id = x.id
    OFFSET 0
  ) g
  WHERE x.i NOT IN (SELECT unnest(busy));

  -- Depth 0: the checked relation on the checked object, and the relations that imply it there.
  SELECT array_agg(x.i), array_agg(x.ns), array_agg(x.id), array_agg(x.rel) INTO f_i, f_ns, f_id, f_rel
  FROM (
    SELECT DISTINCT c.i, c.ons AS ns, c.oid AS id, COALESCE(r.implied, c.rel) AS rel
    FROM jsonb_to_recordset(items) AS c(i INT, ons TEXT COLLATE "C", oid TEXT COLLATE "C", rel TEXT COLLATE "C")
    LEFT JOIN jsonb_to_recordset(closure) AS r(ns TEXT COLLATE "C", rel TEXT COLLATE "C", implied TEXT COLLATE "C")
      ON r.ns = c.ons AND r.rel = c.rel
  ) x;
  -- A check whose subject holds no grant (so has no group) holds nothing: it does not walk.
  SELECT array_agg(f.i), array_agg(f.ns), array_agg(f.id), array_agg(f.rel) INTO f_i, f_ns, f_id, f_rel
  FROM unnest(f_i, f_ns, f_id, f_rel) AS f(i, ns, id, rel)
  WHERE f.i IN (SELECT unnest(h_i)) OR f.i IN (SELECT unnest(busy));
  IF f_i IS NULL THEN
    RETURN;
  END IF;
  v_i := f_i; v_ns := f_ns; v_id := f_id; v_rel := f_rel;
  -- Reading the subject's groups is the first of a check's steps.
  FOR walker IN SELECT x.i, count(*)::INT - 1 AS n FROM unnest(s_i) x(i) GROUP BY x.i LOOP
    steps[walker.i + 1] := walker.n;
  END LOOP;

  LOOP
    -- A check holds once a pair of the frontier is held by one of its subjects: looked up among
    -- what they hold, or for busy checks among the pair's holders (one index range, usually a few
    -- rows), a crowded pair (an organisation's members, say) being probed for the subjects instead.
    WITH frontier AS (SELECT * FROM unnest(f_i, f_ns, f_id, f_rel) AS f(i, ns, id, rel)),
    probed AS (SELECT * FROM frontier f WHERE f.i IN (SELECT unnest(busy))),
    subjects AS (SELECT * FROM unnest(s_i, s_ns, s_id) AS s(i, ns, id)),
    holders AS MATERIALIZED (
      SELECT f.i, f.ns AS object_ns, f.id AS object_id, f.rel, h.subject_ns AS ns, h.subject_id AS id
      FROM probed f
      CROSS JOIN LATERAL (
        SELECT g.subject_ns, g.subject_id FROM "grants" g
        WHERE g.tenant_id = tenant AND g.object_ns = f.ns AND g.object_id = f.id AND g.relation = f.rel
        LIMIT holders_read + 1
      ) h
    ),
    crowded AS (
      SELECT h.i, h.object_ns, h.object_id, h.rel FROM holders h
      GROUP BY h.i, h.object_ns, h.object_id, h.rel
      HAVING count(*) > holders_read
    )
    SELECT array_agg(DISTINCT m.i) INTO allowed
    FROM (
      SELECT x.i FROM (SELECT f.i, f.ns, f.id, f.rel FROM frontier f INTERSECT SELECT * FROM unnest(h_i, h_ns, h_id, h_rel)) x
      UNION ALL
      SELECT x.i FROM (SELECT h.i, h.ns, h.id FROM holders h INTERSECT SELECT s.i, s.ns, s.id FROM subjects s) x
      UNION ALL
      SELECT c.i FROM crowded c
      JOIN subjects s ON s.i = c.i
      CROSS JOIN LATERAL (
        SELECT 1 FROM "grants" g
        WHERE g.tenant_id = tenant AND g.object_ns = c.object_ns AND g.object_id = c.object_id AND g.relation = c.rel
          AND g.subject_ns = s.ns AND g.subject_id = s.id
        LIMIT 1
      ) hit
    ) m;
    RETURN QUERY SELECT a, 'allowed' FROM unnest(allowed) a;
    EXIT WHEN depth = max_depth OR NOT EXISTS (SELECT FROM unnest(f_i) o WHERE o NOT IN (SELECT unnest(allowed)));

    -- The pairs of this level are steps of the checks still walking.
    walking := NULL;
    FOR walker IN SELECT o AS i, count(*)::INT AS n FROM unnest(f_i) o WHERE o NOT IN (SELECT unnest(allowed)) GROUP BY o LOOP
      steps[walker.i + 1] := coalesce(steps[walker.i + 1], 0) + walker.n;
      walking := walking || walker.i;
    END LOOP;

    -- One arrow further from the frontier of the checks still walking, to pairs not visited yet.
    -- Grants are read once per (check, object, via) probe, and each object they reach is kept once
    -- per set of relations the arrows lead to before those are spread out: in a dense graph most
    -- objects are reached many times over. They count as steps once per pair that reads them. The
    -- probes are read a part at a time (an eighth of them, at least 16), and a check past its budget
    -- reads no further: a check of a dense graph stops near its budget, not a whole level later.
    SELECT array_agg(p.i ORDER BY p.k), array_agg(p.ns ORDER BY p.k), array_agg(p.id ORDER BY p.k), array_agg(p.via ORDER BY p.k),
           array_agg(p.targets ORDER BY p.k), array_agg(p.pairs ORDER BY p.k)
    INTO p_i, p_ns, p_id, p_via, p_targets, p_pairs
    FROM (
      SELECT f.i, f.ns, f.id, a.via, string_agg(DISTINCT a.target, ',' ORDER BY a.target) AS targets, count(DISTINCT f.rel)::INT AS pairs,
             row_number() OVER (ORDER BY f.i, f.ns, f.id, a.via) AS k
      FROM unnest(f_i, f_ns, f_id, f_rel) AS f(i, ns, id, rel)
      JOIN jsonb_to_recordset(arrows) AS a(ns TEXT COLLATE "C", rel TEXT COLLATE "C", via TEXT COLLATE "C", target TEXT COLLATE "C")
        ON a.ns = f.ns AND a.rel = f.rel
      WHERE f.i NOT IN (SELECT unnest(allowed))
      GROUP BY f.i, f.ns, f.id, a.via
    ) p;
    stopped := NULL;
    rc_i := NULL; rc_ns := NULL; rc_id := NULL; rc_targets := NULL;
    n_probes := coalesce(array_length(p_i, 1), 0);
    part := greatest(16, ceil(n_probes / 8.0)::INT);
    pos := 1;
    LOOP
      -- Checks past their budget of steps (their pairs may have taken them there) read no further.
      FOR walker IN SELECT w.i FROM unnest(walking) AS w(i) WHERE steps[w.i + 1] > max_steps AND w.i NOT IN (SELECT unnest(stopped)) LOOP
        stopped := stopped || walker.i;
        check_index := walker.i; outcome := 'too-many-steps';
        RETURN NEXT;
      END LOOP;
      EXIT WHEN pos > n_probes;
      WITH probes AS (
        SELECT * FROM unnest(p_i[pos:pos + part - 1], p_ns[pos:pos + part - 1], p_id[pos:pos + part - 1], p_via[pos:pos + part - 1],
                             p_targets[pos:pos + part - 1], p_pairs[pos:pos + part - 1]) AS p(i, ns, id, via, targets, pairs)
        WHERE p.i NOT IN (SELECT unnest(stopped))
      ),
      read AS MATERIALIZED (
        SELECT p.i, g.subject_ns AS ns, g.subject_id AS id, p.targets, p.pairs
        FROM probes p
        CROSS JOIN LATERAL (
          SELECT g.subject_ns, g.subject_id FROM "grants" g
          WHERE g.tenant_id = tenant AND g.object_ns = p.ns AND g.object_id = p.id AND g.relation = p.via
          OFFSET 0
        ) g
      )
      SELECT x.a_i, x.a_ns, x.a_id, x.a_t, y.c_i, y.c_n INTO c_i, c_ns, c_id, c_targets, r_i, r_n
      FROM (SELECT array_agg(d.i) AS a_i, array_agg(d.ns) AS a_ns, array_agg(d.id) AS a_id, array_agg(d.targets) AS a_t
            FROM (SELECT DISTINCT r.i, r.ns, r.id, r.targets FROM read r) d) x,
           (SELECT array_agg(e.i) AS c_i, array_agg(e.n) AS c_n FROM (SELECT r.i, sum(r.pairs)::INT AS n FROM read r GROUP BY r.i) e) y;
      rc_i := rc_i || c_i; rc_ns := rc_ns || c_ns; rc_id := rc_id || c_id; rc_targets := rc_targets || c_targets;
      FOR walker IN SELECT r.i, r.n FROM unnest(r_i, r_n) AS r(i, n) LOOP
        steps[walker.i + 1] := coalesce(steps[walker.i + 1], 0) + walker.n;
      END LOOP;
      pos := pos + part;
    END LOOP;

    SELECT array_agg(n.i), array_agg(n.ns), array_agg(n.id), array_agg(n.rel) INTO f_i, f_ns, f_id, f_rel
    FROM (
      SELECT r.i, r.ns, r.id, COALESCE(c.implied, t.target) AS rel
      FROM unnest(rc_i, rc_ns, rc_id, rc_targets) AS r(i, ns, id, targets)
      CROSS JOIN unnest(string_to_array(r.targets, ',')) AS t(target)
      LEFT JOIN jsonb_to_recordset(closure) AS c(ns TEXT COLLATE "C", rel TEXT COLLATE "C", implied TEXT COLLATE "C")
        ON c.ns = r.ns AND c.rel = t.target
      WHERE r.i NOT IN (SELECT unnest(stopped))
      EXCEPT
      SELECT * FROM unnest(v_i, v_ns, v_id, v_rel)
    ) n;
    EXIT WHEN f_i IS NULL;
    v_i := v_i || f_i; v_ns := v_ns || f_ns; v_id := v_id || f_id; v_rel := v_rel || f_rel;
    depth := depth + 1;
    IF clock_timestamp() - started > max_ms * interval '1 millisecond' THEN
      RETURN QUERY SELECT DISTINCT o, 'too-slow' FROM unnest(f_i) o;
      EXIT;
    END IF;
  END LOOP;
END $$;
