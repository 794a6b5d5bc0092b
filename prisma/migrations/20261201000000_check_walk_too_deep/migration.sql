-- grantd_check_walk (migration 20261130000000_check_walk_wildcards) again, for the parts of rules
-- (docs/model.md#model-limits): asked to report_too_deep, a check still denied at max_depth is
-- reported 'too-deep' when a further arrow leads to a pair not yet visited, so that a `requires` or
-- `excludes` reference that cannot be decided within 16 arrows is refused rather than guessed. A
-- check's walk with report_too_deep false is the walk as it was.
DROP FUNCTION "grantd_check_walk"(UUID, JSONB, JSONB, JSONB, INT, INT, INT, INT, INT, TIMESTAMPTZ);

-- The walk behind checks that PostgreSQL answers (CHECK_SQL in src/store/graph-sql.ts;
-- docs/decisions.md#checks-in-postgresql-walk-each-pair-once). It goes backwards from each checked object
-- breadth-first, each (object, relation) pair once, at the fewest arrows that reach it, and follows at
-- most max_depth arrows in a chain: exactly the walk over grants held in memory. Level by level, for a
-- batch of checks at once: the pairs reached at the current depth (the frontier) are matched against each
-- check's subjects (its subject, the wildcard of its namespace when that is the subject of a grant in force,
-- and the groups either is a direct member of: docs/model.md); a check they match is allowed
-- and walks no further; the others go one arrow further, to the pairs not yet visited. A check past
-- max_steps once a level is expanded stops and is reported too complex; every check still walking once
-- max_ms have passed is reported too slow. Asked to report_too_deep (a part of a rule, which must be
-- decided within the arrows left: src/engine/rule-check.ts), a check still denied at max_depth expands
-- that level too, charged as any, and is reported too deep if it reaches a pair not yet visited. Only
-- grants in force at walk_at confer. STABLE: each statement reads the calling statement's snapshot, so
-- the walk sees one state of the grants.
CREATE OR REPLACE FUNCTION "grantd_check_walk"(
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
  holders_read INT,
  -- The server's clock: a grant confers only while walk_at is in its window (not_before <= walk_at < expires_at).
  walk_at TIMESTAMPTZ,
  report_too_deep BOOLEAN
) RETURNS TABLE (check_index INT, outcome TEXT) -- allowed, too-many-steps, too-slow or too-deep; no row: denied
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
  -- The checks whose subjects hold a grant, and those whose holdings are to be read next.
  holding INT[];
  reading INT[];
  held_n INT;
  -- The pairs every check has visited, and the frontier.
  v_i INT[];
  v_ns TEXT[] COLLATE "C";
  v_id TEXT[] COLLATE "C";
  v_rel TEXT[] COLLATE "C";
  f_i INT[];
  f_ns TEXT[] COLLATE "C";
  f_id TEXT[] COLLATE "C";
  f_rel TEXT[] COLLATE "C";
  -- Steps taken per check, at index i + 1; and the steps the last level's reads took the checks of r_i.
  steps INT[] := '{}';
  r_i INT[];
  r_n INT[];
  -- The arrows by (namespace, relation, via), with the relations they lead to (sorted, joined by commas).
  a_ns TEXT[] COLLATE "C";
  a_rel TEXT[] COLLATE "C";
  a_via TEXT[] COLLATE "C";
  a_targets TEXT[];
  -- The probes of a level in order of (check, pairs), and where each (check, pairs) run of them lies.
  b_i INT[];
  b_pairs INT[];
  b_lo INT[];
  b_hi INT[];
  -- The checks that expand the current level.
  walking INT[];
  -- The probes of a level, (check, object, via) with the relations the arrows lead to (joined by
  -- commas: names cannot hold one) and how many of the check's pairs read through it; and the
  -- objects the level's reads reached, with those relations.
  p_i INT[];
  p_ns TEXT[] COLLATE "C";
  p_id TEXT[] COLLATE "C";
  p_via TEXT[] COLLATE "C";
  p_targets TEXT[];
  p_pairs INT[];
  c_i INT[];
  c_ns TEXT[] COLLATE "C";
  c_id TEXT[] COLLATE "C";
  c_targets TEXT[];
  allowed INT[];
  stopped INT[];
  over_budget INT[];
  walker RECORD;
BEGIN
  -- A namespace's wildcard `ns:*` is a subject of every check of a subject of that namespace, once it
  -- is the subject of some grant in force (one index probe a namespace): a tenant without one walks
  -- and counts steps as before. A check of `ns:*` itself has it once.
  WITH checks AS (
    SELECT * FROM jsonb_to_recordset(items) AS c(i INT, sns TEXT COLLATE "C", sid TEXT COLLATE "C")
  ),
  wildcards AS (
    SELECT w.ns FROM (SELECT DISTINCT c.sns AS ns FROM checks c) w
    WHERE EXISTS (
      SELECT 1 FROM "grants" g
      WHERE g.tenant_id = tenant AND (g.not_before IS NULL OR g.not_before <= walk_at) AND (g.expires_at IS NULL OR g.expires_at > walk_at) AND g.subject_ns = w.ns AND g.subject_id = '*'
    )
  ),
  own AS (
    SELECT c.i, c.sns AS ns, c.sid AS id FROM checks c
    UNION
    SELECT c.i, c.sns, '*' FROM checks c JOIN wildcards w ON w.ns = c.sns
  )
  SELECT array_agg(x.i), array_agg(x.ns), array_agg(x.id) INTO s_i, s_ns, s_id
  FROM (
    SELECT o.i, o.ns, o.id FROM own o
    UNION
    SELECT o.i, g.object_ns, g.object_id
    FROM own o
    CROSS JOIN LATERAL (
      SELECT g.object_ns, g.object_id FROM "grants" g
      WHERE g.tenant_id = tenant AND (g.not_before IS NULL OR g.not_before <= walk_at) AND (g.expires_at IS NULL OR g.expires_at > walk_at) AND g.subject_ns = o.ns AND g.subject_id = o.id AND g.relation = 'member'
      OFFSET 0
    ) g
  ) x;

  SELECT array_agg(c.i) FILTER (WHERE c.most > held_read), array_agg(c.i) FILTER (WHERE c.most > 0),
         array_agg(c.i) FILTER (WHERE c.most BETWEEN 1 AND held_read)
  INTO busy, holding, reading
  FROM (
    SELECT x.i, max(held.n) AS most
    FROM unnest(s_i, s_ns, s_id) AS x(i, ns, id)
    CROSS JOIN LATERAL (
      SELECT count(*) AS n FROM (
        SELECT 1 FROM "grants" g WHERE g.tenant_id = tenant AND (g.not_before IS NULL OR g.not_before <= walk_at) AND (g.expires_at IS NULL OR g.expires_at > walk_at) AND g.subject_ns = x.ns AND g.subject_id = x.id LIMIT held_read + 1
      ) g
    ) held
    GROUP BY x.i
  ) c;

  -- Depth 0: the checked relation on the checked object, and the relations that imply it there.
  SELECT array_agg(x.i), array_agg(x.ns), array_agg(x.id), array_agg(x.rel) INTO f_i, f_ns, f_id, f_rel
  FROM (
    SELECT DISTINCT c.i, c.ons AS ns, c.oid AS id, COALESCE(r.implied, c.rel) AS rel
    FROM jsonb_to_recordset(items) AS c(i INT, ons TEXT COLLATE "C", oid TEXT COLLATE "C", rel TEXT COLLATE "C")
    LEFT JOIN jsonb_to_recordset(closure) AS r(ns TEXT COLLATE "C", rel TEXT COLLATE "C", implied TEXT COLLATE "C")
      ON r.ns = c.ons AND r.rel = c.rel
  ) x;
  -- A check none of whose subjects holds a grant (its subject then has no group) holds nothing: it does not walk.
  SELECT array_agg(f.i), array_agg(f.ns), array_agg(f.id), array_agg(f.rel) INTO f_i, f_ns, f_id, f_rel
  FROM unnest(f_i, f_ns, f_id, f_rel) AS f(i, ns, id, rel)
  WHERE f.i IN (SELECT unnest(holding));
  IF f_i IS NULL THEN
    RETURN;
  END IF;
  v_i := f_i; v_ns := f_ns; v_id := f_id; v_rel := f_rel;
  -- Reading the subject's groups (and the wildcard and its groups) is the first of a check's steps.
  FOR walker IN SELECT x.i, count(*)::INT - 1 AS n FROM unnest(s_i) x(i) GROUP BY x.i LOOP
    steps[walker.i + 1] := walker.n;
  END LOOP;

  LOOP
    -- A busy check whose frontier has more pairs than its subjects hold grants reads those grants
    -- (one index range a subject) rather than probe each pair's holders (one index descent a pair).
    IF busy IS NOT NULL THEN
      FOR walker IN
        SELECT f.i, count(*)::INT AS n FROM unnest(f_i) AS f(i)
        WHERE f.i IN (SELECT unnest(busy)) GROUP BY f.i HAVING count(*) > held_read
      LOOP
        SELECT count(*) INTO held_n FROM (
          SELECT 1 FROM unnest(s_i, s_ns, s_id) AS x(i, ns, id)
          CROSS JOIN LATERAL (
            SELECT 1 FROM "grants" g WHERE g.tenant_id = tenant AND (g.not_before IS NULL OR g.not_before <= walk_at) AND (g.expires_at IS NULL OR g.expires_at > walk_at) AND g.subject_ns = x.ns AND g.subject_id = x.id LIMIT walker.n + 1
          ) g
          WHERE x.i = walker.i
          LIMIT walker.n + 1
        ) held;
        IF held_n <= walker.n THEN
          reading := reading || walker.i;
          busy := array_remove(busy, walker.i);
        END IF;
      END LOOP;
    END IF;
    IF reading IS NOT NULL THEN
      SELECT h_i || array_agg(x.i), h_ns || array_agg(g.object_ns), h_id || array_agg(g.object_id), h_rel || array_agg(g.relation)
      INTO h_i, h_ns, h_id, h_rel
      FROM unnest(s_i, s_ns, s_id) AS x(i, ns, id)
      CROSS JOIN LATERAL (
        SELECT g.object_ns, g.object_id, g.relation FROM "grants" g
        WHERE g.tenant_id = tenant AND (g.not_before IS NULL OR g.not_before <= walk_at) AND (g.expires_at IS NULL OR g.expires_at > walk_at) AND g.subject_ns = x.ns AND g.subject_id = x.id
        OFFSET 0
      ) g
      WHERE x.i IN (SELECT unnest(reading));
      reading := NULL;
    END IF;

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
        WHERE g.tenant_id = tenant AND (g.not_before IS NULL OR g.not_before <= walk_at) AND (g.expires_at IS NULL OR g.expires_at > walk_at) AND g.object_ns = f.ns AND g.object_id = f.id AND g.relation = f.rel
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
        WHERE g.tenant_id = tenant AND (g.not_before IS NULL OR g.not_before <= walk_at) AND (g.expires_at IS NULL OR g.expires_at > walk_at) AND g.object_ns = c.object_ns AND g.object_id = c.object_id AND g.relation = c.rel
          AND g.subject_ns = s.ns AND g.subject_id = s.id
        LIMIT 1
      ) hit
    ) m;
    RETURN QUERY SELECT a, 'allowed' FROM unnest(allowed) a;
    EXIT WHEN (depth = max_depth AND NOT report_too_deep) OR NOT EXISTS (SELECT FROM unnest(f_i) o WHERE o NOT IN (SELECT unnest(allowed)));

    -- The pairs of this level are steps of the checks still walking.
    walking := NULL;
    FOR walker IN SELECT o AS i, count(*)::INT AS n FROM unnest(f_i) o WHERE o NOT IN (SELECT unnest(allowed)) GROUP BY o LOOP
      steps[walker.i + 1] := coalesce(steps[walker.i + 1], 0) + walker.n;
      walking := walking || walker.i;
    END LOOP;

    -- Checks their pairs took past their budget read nothing more.
    stopped := NULL;
    FOR walker IN SELECT w.i FROM unnest(walking) AS w(i) WHERE steps[w.i + 1] > max_steps LOOP
      stopped := stopped || walker.i;
      check_index := walker.i; outcome := 'too-many-steps';
      RETURN NEXT;
    END LOOP;

    IF a_ns IS NULL THEN
      -- Wanted once a check walks past its first level only.
      SELECT array_agg(x.ns), array_agg(x.rel), array_agg(x.via), array_agg(x.targets) INTO a_ns, a_rel, a_via, a_targets
      FROM (
        SELECT a.ns, a.rel, a.via, string_agg(DISTINCT a.target, ',' ORDER BY a.target) AS targets
        FROM jsonb_to_recordset(arrows) AS a(ns TEXT COLLATE "C", rel TEXT COLLATE "C", via TEXT COLLATE "C", target TEXT COLLATE "C")
        GROUP BY a.ns, a.rel, a.via
      ) x;
    END IF;

    -- One arrow further from the frontier of the checks still walking, to pairs not visited yet.
    -- Grants are read once per (check, object, via) probe, and each object they reach is kept once
    -- per set of relations the arrows lead to before those are spread out: in a dense graph most
    -- objects are reached many times over. They count as steps once per pair that reads them
    -- (the probe's pairs). Grouped by hashing: a sort per group cost more than the reads.
    SELECT array_agg(p.ns ORDER BY p.k), array_agg(p.id ORDER BY p.k), array_agg(p.via ORDER BY p.k), array_agg(p.targets ORDER BY p.k),
           array_agg(p.i ORDER BY p.k), array_agg(p.pairs ORDER BY p.k)
    INTO p_ns, p_id, p_via, p_targets, p_i, p_pairs
    FROM (
      SELECT q.*, row_number() OVER (ORDER BY q.i, q.pairs) AS k
      FROM (
        SELECT f.i, f.ns, f.id, a.via, count(*)::INT AS pairs,
               CASE WHEN min(a.targets) = max(a.targets) THEN min(a.targets) ELSE string_agg(a.targets, ',') END AS targets
        FROM unnest(f_i, f_ns, f_id, f_rel) AS f(i, ns, id, rel)
        JOIN unnest(a_ns, a_rel, a_via, a_targets) AS a(ns, rel, via, targets) ON a.ns = f.ns AND a.rel = f.rel
        WHERE f.i NOT IN (SELECT unnest(allowed)) AND f.i NOT IN (SELECT unnest(stopped))
        GROUP BY f.i, f.ns, f.id, a.via
      ) q
    ) p;
    SELECT array_agg(b.i), array_agg(b.pairs), array_agg(b.lo), array_agg(b.hi) INTO b_i, b_pairs, b_lo, b_hi
    FROM (
      SELECT p.i, p.pairs, min(p.k)::INT AS lo, max(p.k)::INT AS hi
      FROM unnest(p_i, p_pairs) WITH ORDINALITY AS p(i, pairs, k)
      GROUP BY p.i, p.pairs
    ) b;

    -- A check reads at most one grant past its budget: each run of its probes with the same pairs
    -- stops once its grants alone would take it past, and the check is stopped if it reached that
    -- bound or its runs together took it past. So a check of a dense graph stops after reading about
    -- as many grants as its budget has steps left, whatever the size of its level.
    WITH read AS MATERIALIZED (
      SELECT b.i, b.pairs, b.k, r.ns, r.id, r.targets
      FROM unnest(b_i, b_pairs, b_lo, b_hi) WITH ORDINALITY AS b(i, pairs, lo, hi, k)
      CROSS JOIN LATERAL (
        SELECT g.subject_ns AS ns, g.subject_id AS id, p.targets
        FROM unnest(p_ns[b.lo:b.hi], p_id[b.lo:b.hi], p_via[b.lo:b.hi], p_targets[b.lo:b.hi]) AS p(ns, id, via, targets)
        CROSS JOIN LATERAL (
          SELECT g.subject_ns, g.subject_id FROM "grants" g
          WHERE g.tenant_id = tenant AND (g.not_before IS NULL OR g.not_before <= walk_at) AND (g.expires_at IS NULL OR g.expires_at > walk_at) AND g.object_ns = p.ns AND g.object_id = p.id AND g.relation = p.via
          OFFSET 0
        ) g
        LIMIT (max_steps - steps[b.i + 1]) / b.pairs + 1
      ) r
    ),
    runs AS (
      SELECT r.i, r.pairs, count(*)::INT AS n FROM read r GROUP BY r.i, r.k, r.pairs
    ),
    taken AS (
      SELECT r.i, sum(r.pairs * r.n)::INT AS n,
             bool_or(r.n > (max_steps - steps[r.i + 1]) / r.pairs) OR sum(r.pairs * r.n) > max_steps - steps[r.i + 1] AS over
      FROM runs r GROUP BY r.i
    )
    SELECT x.a_i, x.a_ns, x.a_id, x.a_t, y.t_i, y.t_n, y.o_i INTO c_i, c_ns, c_id, c_targets, r_i, r_n, over_budget
    FROM (SELECT array_agg(d.i) AS a_i, array_agg(d.ns) AS a_ns, array_agg(d.id) AS a_id, array_agg(d.targets) AS a_t
          FROM (SELECT DISTINCT r.i, r.ns, r.id, r.targets FROM read r WHERE r.i NOT IN (SELECT t.i FROM taken t WHERE t.over)) d) x,
         (SELECT array_agg(t.i) FILTER (WHERE NOT t.over) AS t_i, array_agg(t.n) FILTER (WHERE NOT t.over) AS t_n,
                 array_agg(t.i) FILTER (WHERE t.over) AS o_i FROM taken t) y;
    FOR walker IN SELECT r.i, r.n FROM unnest(r_i, r_n) AS r(i, n) LOOP
      steps[walker.i + 1] := coalesce(steps[walker.i + 1], 0) + walker.n;
    END LOOP;
    RETURN QUERY SELECT o, 'too-many-steps' FROM unnest(over_budget) o;
    EXIT WHEN c_i IS NULL;

    SELECT array_agg(n.i), array_agg(n.ns), array_agg(n.id), array_agg(n.rel) INTO f_i, f_ns, f_id, f_rel
    FROM (
      SELECT r.i, r.ns, r.id, COALESCE(c.implied, t.target) AS rel
      FROM unnest(c_i, c_ns, c_id, c_targets) AS r(i, ns, id, targets)
      CROSS JOIN unnest(string_to_array(r.targets, ',')) AS t(target)
      LEFT JOIN jsonb_to_recordset(closure) AS c(ns TEXT COLLATE "C", rel TEXT COLLATE "C", implied TEXT COLLATE "C")
        ON c.ns = r.ns AND c.rel = t.target
      EXCEPT
      SELECT * FROM unnest(v_i, v_ns, v_id, v_rel)
    ) n;
    EXIT WHEN f_i IS NULL;
    IF depth = max_depth THEN
      RETURN QUERY SELECT DISTINCT o, 'too-deep' FROM unnest(f_i) o;
      EXIT;
    END IF;
    v_i := v_i || f_i; v_ns := v_ns || f_ns; v_id := v_id || f_id; v_rel := v_rel || f_rel;
    depth := depth + 1;
    IF clock_timestamp() - started > max_ms * interval '1 millisecond' THEN
      RETURN QUERY SELECT DISTINCT o, 'too-slow' FROM unnest(f_i) o;
      EXIT;
    END IF;
  END LOOP;
END $$;
