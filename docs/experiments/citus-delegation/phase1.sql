-- Phase 1: the group's work as statements Citus plans on the tenant's
-- worker (no INSERT CTEs), results chained through PL/pgSQL variables.
CREATE FUNCTION public.exp_group(p_tenant bigint, p_seed bigint, p_n int)
RETURNS TABLE (o_i bigint, o_outcome text) LANGUAGE plpgsql SET jit = off AS $fn$
DECLARE
  v_now timestamptz := now(); v_exp timestamptz := now() + interval '1 day';
  v_delivery uuid := gen_random_uuid();
  v_key bytea[]; v_seq int[]; v_obj text[]; v_rev bigint[]; v_snap jsonb[]; v_out text[];
BEGIN
  SELECT array_agg(decode(md5(p_seed || ':' || g), 'hex') ORDER BY g), array_agg(g ORDER BY g),
         array_agg('c' || ((p_seed * 7919 + g) % 20000) ORDER BY g), array_agg(p_seed ORDER BY g),
         array_agg(jsonb_build_object('rev', p_seed, 'g', g) ORDER BY g)
    INTO v_key, v_seq, v_obj, v_rev, v_snap FROM generate_series(1, p_n) g;
  INSERT INTO public.exp_keys AS k (tenant_id, key, delivery_id, seq, claimed_at, expires_at)
  SELECT p.tenant_id, e.key, v_delivery, e.s, v_now, v_exp
  FROM public.exp_providers p, unnest(v_key, v_seq) AS e(key, s)
  WHERE p.tenant_id = p_tenant AND p.id = 1 ORDER BY e.key
  ON CONFLICT (tenant_id, key) DO UPDATE SET delivery_id = EXCLUDED.delivery_id, seq = EXCLUDED.seq,
      claimed_at = EXCLUDED.claimed_at, expires_at = EXCLUDED.expires_at
  WHERE k.expires_at <= EXCLUDED.claimed_at;
  INSERT INTO public.exp_records AS r (tenant_id, provider_id, object_id, revision, snapshot, last_delivery, last_seq)
  SELECT k.tenant_id, 1, e.o, e.r, e.sn, k.delivery_id, e.s
  FROM unnest(v_key, v_seq, v_obj, v_rev, v_snap) AS e(key, s, o, r, sn)
  JOIN public.exp_keys k ON k.tenant_id = p_tenant AND k.key = e.key AND k.delivery_id = v_delivery AND k.seq = e.s
  ORDER BY e.o
  ON CONFLICT (tenant_id, provider_id, object_id) DO UPDATE SET revision = EXCLUDED.revision, snapshot = EXCLUDED.snapshot,
      last_delivery = EXCLUDED.last_delivery, last_seq = EXCLUDED.last_seq
  WHERE EXCLUDED.revision > r.revision;
  INSERT INTO public.exp_accepted (tenant_id, provider_id, object_id, revision, snapshot)
  SELECT p_tenant, r.provider_id, r.object_id, r.revision, r.snapshot
  FROM unnest(v_seq, v_obj) AS e(s, o)
  JOIN public.exp_records r ON r.tenant_id = p_tenant AND r.provider_id = 1 AND r.object_id = e.o
                       AND r.last_delivery = v_delivery AND r.last_seq = e.s;
  SELECT array_agg(CASE WHEN k.delivery_id = v_delivery AND k.seq = e.s
                        THEN CASE WHEN r.last_delivery = v_delivery AND r.last_seq = e.s THEN 'applied' ELSE 'stale' END
                        ELSE 'duplicate' END ORDER BY e.i) INTO v_out
  FROM unnest(v_key, v_seq, v_obj) WITH ORDINALITY AS e(key, s, o, i)
  LEFT JOIN public.exp_keys k ON k.tenant_id = p_tenant AND k.key = e.key
  LEFT JOIN public.exp_records r ON r.tenant_id = p_tenant AND r.provider_id = 1 AND r.object_id = e.o;
  INSERT INTO public.exp_events (tenant_id, received_at, delivery_id, seq, object_id, revision, outcome)
  SELECT p_tenant, v_now, v_delivery, e.s, e.o, e.r, e.oc FROM unnest(v_seq, v_obj, v_rev, v_out) AS e(s, o, r, oc);
  RETURN QUERY SELECT e.i, e.oc FROM unnest(v_out) WITH ORDINALITY AS e(oc, i);
END $fn$;
