-- Phase 2: the group's work as one CTE chain run by PostgreSQL on the
-- tenant's shards, under the lock Citus's own writes take on the shard
-- group; ids drawn from the worker's sequences (shards have no defaults).
CREATE FUNCTION public.exp_group_shard(p_tenant bigint, p_seed bigint, p_n int)
RETURNS TABLE (o_i bigint, o_outcome text) LANGUAGE plpgsql SET jit = off AS $fn$
DECLARE
  v_now timestamptz := now(); v_exp timestamptz := now() + interval '1 day';
  v_delivery uuid := gen_random_uuid();
  v_key bytea[]; v_seq int[]; v_obj text[]; v_rev bigint[]; v_snap jsonb[];
  v_shard bigint := get_shard_id_for_distribution_column('public.exp_providers', p_tenant);
  k text; r text; a text; ev text;
BEGIN
  PERFORM lock_shard_metadata(5, ARRAY[v_shard]);
  -- In a statement after the lock (a fresh snapshot): the placement is
  -- here, so no move or split can cut over under this transaction.
  IF NOT EXISTS (SELECT FROM pg_dist_placement pl JOIN pg_dist_local_group lg USING (groupid) WHERE pl.shardid = v_shard) THEN
    RAISE EXCEPTION 'shard % of tenant % is not on this node', v_shard, p_tenant USING ERRCODE = '40001';
  END IF;
  SELECT shard_name('public.exp_keys'::regclass, get_shard_id_for_distribution_column('public.exp_keys', p_tenant)),
         shard_name('public.exp_records'::regclass, get_shard_id_for_distribution_column('public.exp_records', p_tenant)),
         shard_name('public.exp_accepted'::regclass, get_shard_id_for_distribution_column('public.exp_accepted', p_tenant)),
         shard_name('public.exp_events'::regclass, get_shard_id_for_distribution_column('public.exp_events', p_tenant))
    INTO k, r, a, ev;
  SELECT array_agg(decode(md5(p_seed || ':' || g), 'hex') ORDER BY g), array_agg(g ORDER BY g),
         array_agg('c' || ((p_seed * 7919 + g) % 20000) ORDER BY g), array_agg(p_seed ORDER BY g),
         array_agg(jsonb_build_object('rev', p_seed, 'g', g) ORDER BY g)
    INTO v_key, v_seq, v_obj, v_rev, v_snap FROM generate_series(1, p_n) g;
  RETURN QUERY EXECUTE format($q$
  WITH claimed AS (
    INSERT INTO %1$s AS k (tenant_id, key, delivery_id, seq, claimed_at, expires_at)
    SELECT $1, e.key, $2, e.s, $3, $4 FROM unnest($5::bytea[], $6::int[]) AS e(key, s) ORDER BY e.key
    ON CONFLICT (tenant_id, key) DO UPDATE SET delivery_id = EXCLUDED.delivery_id, seq = EXCLUDED.seq,
        claimed_at = EXCLUDED.claimed_at, expires_at = EXCLUDED.expires_at
    WHERE k.expires_at <= EXCLUDED.claimed_at RETURNING k.key, k.seq),
  ev AS (SELECT * FROM unnest($5::bytea[], $6::int[], $7::text[], $8::bigint[], $9::jsonb[]) WITH ORDINALITY AS e(key, s, o, r, sn, i)),
  applied AS (
    INSERT INTO %2$s AS r (tenant_id, provider_id, object_id, revision, snapshot, last_delivery, last_seq)
    SELECT $1, 1, e.o, e.r, e.sn, $2, e.s FROM ev e JOIN claimed c ON c.key = e.key ORDER BY e.o
    ON CONFLICT (tenant_id, provider_id, object_id) DO UPDATE SET revision = EXCLUDED.revision, snapshot = EXCLUDED.snapshot,
        last_delivery = EXCLUDED.last_delivery, last_seq = EXCLUDED.last_seq
    WHERE EXCLUDED.revision > r.revision RETURNING r.object_id, r.last_seq, r.revision, r.snapshot),
  acc AS (INSERT INTO %3$s (id, tenant_id, provider_id, object_id, revision, snapshot)
    SELECT nextval(pg_get_serial_sequence('public.exp_accepted', 'id')), $1, 1, object_id, revision, snapshot FROM applied),
  decided AS (SELECT e.i, e.s, e.o, e.r, CASE WHEN c.key IS NULL THEN 'duplicate' WHEN ap.object_id IS NULL THEN 'stale' ELSE 'applied' END AS oc
    FROM ev e LEFT JOIN claimed c ON c.key = e.key LEFT JOIN applied ap ON ap.object_id = e.o AND ap.last_seq = e.s),
  logged AS (INSERT INTO %4$s (tenant_id, received_at, delivery_id, seq, object_id, revision, outcome, search_id)
    SELECT $1, $3, $2, s, o, r, oc, nextval('public.exp_events_search_seq') FROM decided)
  SELECT i, oc FROM decided ORDER BY i$q$, k, r, a, ev)
  USING p_tenant, v_delivery, v_now, v_exp, v_key, v_seq, v_obj, v_rev, v_snap;
END $fn$;
