#!/usr/bin/env bash
# What an index on transactions costs a bulk insert (BENCHMARKS.md, "Transfer
# detection"): 1,000,000 rows of one user, 2,740 a day, inserted in date
# order in 100 statements of 10,000 rows into a table shaped like
# transactions' hot columns with its two listing indexes, once per index
# definition given (none: the baseline). With SORTED=1 each statement's
# rows are in (date, amount) order, as a first sync's large batches are
# copied in; else in random amount order within a day.
#
#   bench/match-index.sh "" "CREATE INDEX m ON t (user_id, tx_date, hash_numeric(abs(amount))) WHERE status <> 'deleted'"
#
# Environment: PGHOST (default 127.0.0.1), PGUSER (default postgres); the
# database matchindex_bench is dropped and made again for each definition.
set -euo pipefail
export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres}
DB=matchindex_bench
order=""
[ "${SORTED:-0}" = 1 ] && order="ORDER BY 7, abs(5)"
for ddl in "$@"; do
  psql -q -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" postgres >/dev/null
  psql -q "$DB" >/dev/null <<SQL
CREATE TABLE t (id uuid PRIMARY KEY, user_id uuid NOT NULL, account_id uuid NOT NULL, status text NOT NULL,
  amount numeric(19,4) NOT NULL, currency text NOT NULL, tx_date date NOT NULL, summary text, filler text);
CREATE INDEX t_user_order ON t (user_id, tx_date DESC, id DESC);
CREATE INDEX t_account_order ON t (account_id, tx_date DESC, id DESC);
${ddl:+$ddl;}
CHECKPOINT;
SQL
  start=$(date +%s.%N)
  for b in $(seq 0 99); do
    psql -q "$DB" -c "INSERT INTO t SELECT gen_random_uuid(), '11111111-1111-1111-1111-111111111111',
      ('00000000-0000-0000-0000-00000000000' || (g % 8))::uuid, 'posted', round((random() * 400 - 200)::numeric, 2), 'USD',
      DATE '2025-01-01' + (($b * 10000 + g) / 2740), 'some merchant name here', repeat('x', 200)
      FROM generate_series(0, 9999) g $order"
  done
  end=$(date +%s.%N)
  printf '%6.2f s  %s\n' "$(echo "$end - $start" | bc)" "${ddl:-(no extra index)}"
done
psql -q -c "DROP DATABASE IF EXISTS $DB" postgres
