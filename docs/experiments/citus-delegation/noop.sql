-- A delegated call that does nothing: what the coordinator costs per group.
CREATE FUNCTION exp_noop(p_tenant bigint) RETURNS int LANGUAGE plpgsql AS $$BEGIN RETURN 1; END$$;
