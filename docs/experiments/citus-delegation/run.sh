#!/bin/bash
# Runs the delegation experiment (README.md) on a Citus cluster and on plain
# PostgreSQL in one command, so the ratios are from one run.
#   run.sh COORDINATOR_URL WORKER_URL PLAIN_URL
# COORDINATOR_URL and WORKER_URL: a cluster's database (make citus prints both),
# which this fills with exp_* tables; PLAIN_URL: an empty PostgreSQL database.
set -euo pipefail
coord=$1 worker=$2 plain=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

psql -v ON_ERROR_STOP=1 -q "$plain" -f "$here/schema.sql" -f "$here/phase1.sql" -f "$here/noop.sql" \
  -c "INSERT INTO exp_providers SELECT t, 1 FROM generate_series(1, 1000) t"
psql -v ON_ERROR_STOP=1 -q "$coord" -f "$here/schema.sql" -f "$here/distribute.sql" -f "$here/phase1.sql" \
  -f "$here/phase2.sql" -f "$here/noop.sql" -o /dev/null \
  -c "SELECT create_distributed_function('exp_group(bigint, bigint, int)', 'p_tenant', colocate_with := 'exp_providers')" \
  -c "SELECT create_distributed_function('exp_group_shard(bigint, bigint, int)', 'p_tenant', colocate_with := 'exp_providers')" \
  -c "SELECT create_distributed_function('exp_noop(bigint)', 'p_tenant', colocate_with := 'exp_providers')" \
  -c "INSERT INTO exp_providers SELECT t, 1 FROM generate_series(1, 1000) t"

script() { # name, statement
  printf '\\set t random(1,1000)\n\\set s random(1,1000000000)\n%s\n' "$2" > "$tmp/$1.sql"
}
measure() { # label, url, script, clients
  local out
  out=$(pgbench -n -M prepared -f "$tmp/$3.sql" -c "$4" -j 2 -T "${SECONDS_EACH:-12}" "$2" 2>&1)
  printf '%-34s c=%-2s %s\n' "$1" "$4" "$(grep -E '^(latency average|tps)' <<<"$out" | sed -E 's/ \(without.*//' | tr '\n' ' ')"
}
for n in 1 100; do
  script "p1_$n" "SELECT * FROM exp_group(:t, :s, $n);"
  script "p2_$n" "SELECT * FROM exp_group_shard(:t, :s, $n);"
  for c in 1 8; do
    measure "plain PostgreSQL, $n events" "$plain" "p1_$n" $c
    measure "Citus phase 1, $n events" "$coord" "p1_$n" $c
    measure "Citus phase 2, $n events" "$coord" "p2_$n" $c
    measure "Citus phase 1 at a worker, $n ev." "$worker" "p1_$n" $c
  done
done
script noop "SELECT exp_noop(:t);"
for c in 1 8; do
  measure "plain PostgreSQL, no-op call" "$plain" noop $c
  measure "Citus delegated no-op call" "$coord" noop $c
done
