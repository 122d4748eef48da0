CREATE SEQUENCE exp_events_search_seq;
CREATE TABLE exp_providers (tenant_id bigint NOT NULL, id bigint NOT NULL, PRIMARY KEY (tenant_id, id));
CREATE TABLE exp_keys (tenant_id bigint NOT NULL, key bytea NOT NULL, delivery_id uuid NOT NULL, seq int NOT NULL,
  claimed_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, key));
CREATE TABLE exp_records (tenant_id bigint NOT NULL, provider_id bigint NOT NULL, object_id text NOT NULL, revision bigint NOT NULL,
  snapshot jsonb NOT NULL, last_delivery uuid, last_seq int, PRIMARY KEY (tenant_id, provider_id, object_id));
CREATE TABLE exp_accepted (tenant_id bigint NOT NULL, id bigint GENERATED ALWAYS AS IDENTITY, provider_id bigint NOT NULL,
  object_id text NOT NULL, revision bigint NOT NULL, snapshot jsonb NOT NULL, PRIMARY KEY (tenant_id, id));
CREATE TABLE exp_events (tenant_id bigint NOT NULL, received_at timestamptz NOT NULL, delivery_id uuid NOT NULL, seq int NOT NULL,
  object_id text, revision bigint, outcome text NOT NULL, search_id bigint DEFAULT nextval('exp_events_search_seq'),
  PRIMARY KEY (tenant_id, received_at, delivery_id, seq)) PARTITION BY RANGE (received_at);
CREATE TABLE exp_events_all PARTITION OF exp_events FOR VALUES FROM ('2000-01-01') TO ('2100-01-01');
