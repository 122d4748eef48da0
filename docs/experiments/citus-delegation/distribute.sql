SELECT create_distributed_table('exp_providers', 'tenant_id');
SELECT create_distributed_table('exp_keys', 'tenant_id', colocate_with => 'exp_providers');
SELECT create_distributed_table('exp_records', 'tenant_id', colocate_with => 'exp_providers');
SELECT create_distributed_table('exp_accepted', 'tenant_id', colocate_with => 'exp_providers');
SELECT create_distributed_table('exp_events', 'tenant_id', colocate_with => 'exp_providers');
