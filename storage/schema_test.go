package storage_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/migrations"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// referenceTables are the tables of the public schema that stay whole when
// the user-owned tables are distributed by user_id (docs/scaling.md, "The
// path"). Every other table is user-owned and must satisfy distributionRules;
// a new table is user-owned unless it is named here, with its reason.
var referenceTables = map[string]string{
	"users":       "reference table: e-mail unique across users; every user-owned table refers to it",
	"credentials": "reference table: a request's token finds its user before any user is known; token_hash unique across users",
	// finsync's migration ledger.
	"goose_db_version": "coordinator",
	// River's tables live on the coordinator, whole: its queue, leader
	// election and migration ledger are the fleet's, not a user's.
	"river_job":          "coordinator",
	"river_leader":       "coordinator",
	"river_migration":    "coordinator",
	"river_queue":        "coordinator",
	"river_notification": "coordinator",
	// Provider-side limits shared by every worker (migration 00005), keyed
	// by the provider's own names and written on provider calls: local to
	// the coordinator, never reference tables (a write to a reference
	// table is a write on every node).
	"provider_rate_buckets": "coordinator",
	"provider_quotas":       "coordinator",
	// Circuit breaker states reported by each worker (migration 00012),
	// keyed by the provider's own names, like the limits above.
	"provider_breakers": "coordinator",
	// One counter of credential changes (migration 00009), bumped by
	// triggers on the reference tables credentials and users.
	"credentials_version": "coordinator",
	// Sessions of the ops console (migration 00020): the operators', not a
	// user's.
	"ops_sessions": "coordinator",
	// Provider-level settings (migration 00026): an operator's, set once
	// for every connection of a provider and read by every sync.
	"provider_settings": "reference table: one provider's settings for every user's connections",
}

// distributionColumn is the column user-owned tables are distributed by.
const distributionColumn = "user_id"

// TestSchemaIsDistributableByUser checks, from the catalog of the migrated
// schema, that every user-owned table can be distributed by user_id with
// Citus as it stands: a NOT NULL uuid user_id, user_id in its primary key
// and in every unique constraint and index, and user_id on both sides of
// every foreign key to another user-owned table, with no SET NULL or SET
// DEFAULT action; and that no reference table refers to a user-owned one.
func TestSchemaIsDistributableByUser(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	ctx := context.Background()
	tables, err := publicTables(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for name := range referenceTables {
		if !slices.Contains(tables, name) {
			// Not an error: a table named for a migration on its way.
			t.Logf("reference table %s is named but does not exist", name)
		}
	}
	violations, err := distributionViolations(ctx, pool, referenceTables)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range violations {
		t.Error(v)
	}
	if len(violations) > 0 {
		t.Log("a table that is not a user's belongs in referenceTables with its reason; see docs/scaling.md")
	}
}

// TestSchemaCheckFindsEveryBrokenRule adds tables that break each rule to a
// migrated schema and checks that the schema check reports each, so that a
// migration breaking the path fails TestSchemaIsDistributableByUser.
func TestSchemaCheckFindsEveryBrokenRule(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		CREATE TABLE widgets_no_user (id uuid PRIMARY KEY);
		CREATE TABLE widgets_nullable (id uuid, user_id uuid, PRIMARY KEY (id));
		CREATE TABLE widgets (
			id uuid, user_id uuid NOT NULL, name text, group_id uuid,
			PRIMARY KEY (id, user_id),
			UNIQUE (name),
			FOREIGN KEY (group_id, user_id) REFERENCES category_groups (id, user_id) ON DELETE SET NULL (group_id)
		);
		CREATE UNIQUE INDEX widgets_lower_name ON widgets (lower(name)) INCLUDE (user_id);
		CREATE TABLE widgets_crossed (id uuid, user_id uuid NOT NULL, other uuid NOT NULL, PRIMARY KEY (id, user_id),
			FOREIGN KEY (user_id, other) REFERENCES accounts (id, user_id));
		ALTER TABLE users ADD COLUMN favourite uuid, ADD COLUMN favourite_user uuid,
			ADD FOREIGN KEY (favourite, favourite_user) REFERENCES accounts (id, user_id);`)
	if err != nil {
		t.Fatal(err)
	}
	violations, err := distributionViolations(ctx, pool, referenceTables)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"widgets_no_user: no NOT NULL uuid column user_id",
		"widgets_nullable: no NOT NULL uuid column user_id",
		"widgets: unique constraint widgets_name_key lacks user_id",
		"widgets: unique index widgets_lower_name lacks user_id in its key",
		"widgets: foreign key widgets_group_id_user_id_fkey to category_groups sets columns on delete",
		"widgets_crossed: foreign key widgets_crossed_user_id_other_fkey does not join user_id to accounts.user_id",
		"users (reference table): foreign key users_favourite_favourite_user_fkey refers to user-owned accounts",
	}
	for _, w := range want {
		if !slices.ContainsFunc(violations, func(v string) bool { return strings.HasPrefix(v, w) }) {
			t.Errorf("violation %q not reported; got:\n%s", w, strings.Join(violations, "\n"))
		}
	}
}

// publicTables lists the ordinary and partitioned tables of the public
// schema (partitions are checked through their parent).
func publicTables(ctx context.Context, q storage.Querier) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT c.relname FROM pg_class c
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// distributionViolations returns one line per broken distribution rule in
// the public schema, reference naming the tables that stay whole.
func distributionViolations(ctx context.Context, q storage.Querier, reference map[string]string) ([]string, error) {
	var out []string
	checks := []func(context.Context, storage.Querier, map[string]string) ([]string, error){
		missingUserID, keysWithoutUserID, uniqueIndexesWithoutUserID, foreignKeysOffUserID,
	}
	for _, check := range checks {
		v, err := check(ctx, q, reference)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

// userOwnedSQL is the predicate "table c is user-owned" for the queries
// below, $1 being the reference tables' names.
const userOwnedSQL = `c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
	AND NOT (c.relname = ANY($1))`

func names(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func collectLines(rows pgx.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, fmt.Errorf("check schema: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// missingUserID: every user-owned table has user_id uuid NOT NULL.
func missingUserID(ctx context.Context, q storage.Querier, reference map[string]string) ([]string, error) {
	return collectLines(q.Query(ctx, `
		SELECT c.relname || ': no NOT NULL uuid column `+distributionColumn+`' FROM pg_class c
		WHERE `+userOwnedSQL+` AND NOT EXISTS (
			SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = '`+distributionColumn+`'
				AND a.atttypid = 'uuid'::regtype AND a.attnotnull AND NOT a.attisdropped)
		ORDER BY 1`, names(reference)))
}

// keysWithoutUserID: a user-owned table has a primary key, and it and every
// unique and exclusion constraint include user_id.
func keysWithoutUserID(ctx context.Context, q storage.Querier, reference map[string]string) ([]string, error) {
	return collectLines(q.Query(ctx, `
		SELECT c.relname || ': no primary key' FROM pg_class c
		WHERE `+userOwnedSQL+` AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'p')
		UNION ALL
		SELECT c.relname || ': ' || CASE k.contype WHEN 'p' THEN 'primary key ' WHEN 'u' THEN 'unique constraint '
				ELSE 'exclusion constraint ' END || k.conname || ' lacks `+distributionColumn+`'
		FROM pg_class c JOIN pg_constraint k ON k.conrelid = c.oid AND k.contype IN ('p', 'u', 'x')
		WHERE `+userOwnedSQL+` AND NOT EXISTS (
			SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = '`+distributionColumn+`'
				AND a.attnum = ANY(k.conkey))
		ORDER BY 1`, names(reference)))
}

// uniqueIndexesWithoutUserID: every unique index of a user-owned table
// (those behind constraints and those created alone) has user_id among its
// key columns; an INCLUDE column does not count.
func uniqueIndexesWithoutUserID(ctx context.Context, q storage.Querier, reference map[string]string) ([]string, error) {
	return collectLines(q.Query(ctx, `
		SELECT c.relname || ': unique index ' || ic.relname || ' lacks `+distributionColumn+` in its key'
		FROM pg_class c JOIN pg_index i ON i.indrelid = c.oid AND i.indisunique JOIN pg_class ic ON ic.oid = i.indexrelid
		WHERE `+userOwnedSQL+` AND NOT EXISTS (
			SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = '`+distributionColumn+`'
				AND a.attnum = ANY((i.indkey::int2[])[0:i.indnkeyatts - 1]))
		ORDER BY 1`, names(reference)))
}

// foreignKeysOffUserID: a foreign key between two user-owned tables pairs
// user_id with user_id and neither sets columns on delete nor changes them
// on update; a reference table refers to no user-owned table.
func foreignKeysOffUserID(ctx context.Context, q storage.Querier, reference map[string]string) ([]string, error) {
	return collectLines(q.Query(ctx, `
		WITH fk AS (
			SELECT k.conname, k.confdeltype, k.confupdtype, c.relname AS src, r.relname AS dst,
				c.relname = ANY($1) AS src_ref, r.relname = ANY($1) AS dst_ref,
				EXISTS (SELECT 1 FROM unnest(k.conkey, k.confkey) AS p(src_att, dst_att)
					JOIN pg_attribute sa ON sa.attrelid = c.oid AND sa.attnum = p.src_att
					JOIN pg_attribute da ON da.attrelid = r.oid AND da.attnum = p.dst_att
					WHERE sa.attname = '`+distributionColumn+`' AND da.attname = '`+distributionColumn+`') AS joins_user
			FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class r ON r.oid = k.confrelid
			WHERE k.contype = 'f' AND c.relnamespace = 'public'::regnamespace
		)
		SELECT src || ': foreign key ' || conname || ' does not join `+distributionColumn+` to ' || dst || '.`+distributionColumn+`'
			FROM fk WHERE NOT src_ref AND NOT dst_ref AND NOT joins_user
		UNION ALL
		SELECT src || ': foreign key ' || conname || ' to ' || dst || ' sets columns on delete'
			FROM fk WHERE NOT src_ref AND NOT dst_ref AND confdeltype IN ('n', 'd')
		UNION ALL
		SELECT src || ': foreign key ' || conname || ' to ' || dst || ' changes columns on update'
			FROM fk WHERE NOT src_ref AND NOT dst_ref AND confupdtype IN ('n', 'd', 'c')
		UNION ALL
		SELECT src || ' (reference table): foreign key ' || conname || ' refers to user-owned ' || dst
			FROM fk WHERE src_ref AND NOT dst_ref
		ORDER BY 1`, names(reference)))
}

// TestDistributionMigrationDownAndUpKeepsData rolls migration 00007 back and
// forward again over stored rows of every table it reshapes: the rows stay,
// and the user_id it adds is filled again from each row's owner.
func TestDistributionMigrationDownAndUpKeepsData(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	ctx := context.Background()
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanPro, true).ID
	conn := fx.Connection(user, "plaid", "active")
	acct := fx.Account(user, conn, "plaid", "Checking")
	fx.Dataset(conn, "accounts", true, "")
	fx.KeyWithID(user, []uuid.UUID{acct}, nil)
	manual, err := fx.St.CreateManualAccount(ctx, user, uuid.Nil, storage.ManualAccount{Name: "Cash", Type: "cash", Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}
	dest, err := fx.St.CreateDestination(ctx, storage.NewDestination{UserID: user, Kind: storage.DestinationWebhook, SealedSecret: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if err := fx.St.LinkAccount(ctx, dest.ID, manual.ID); err != nil {
		t.Fatal(err)
	}
	if err := fx.St.InTx(ctx, func(tx pgx.Tx) error {
		_, err := storage.EnqueueAccountEvent(ctx, tx, storage.AccountEvent{ID: uuid.New(), AccountID: manual.ID,
			Type: "account.updated", Account: []byte(`{}`), OccurredAt: time.Now()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	added := []string{"connection_datasets", "credential_accounts", "destination_accounts", "destination_outbox"}
	before := ownedRows(t, pool, user, added)

	gp := newGoose(t, pool)
	if _, err := gp.ApplyVersion(ctx, 7, false); err != nil {
		t.Fatalf("migration 7 down: %v", err)
	}
	for _, table := range added {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'user_id' AND NOT attisdropped`,
			table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s still has user_id after migration 7 down", table)
		}
	}
	if _, err := gp.ApplyVersion(ctx, 7, true); err != nil {
		t.Fatalf("migration 7 up again: %v", err)
	}
	if after := ownedRows(t, pool, user, added); !slices.Equal(after, before) {
		t.Errorf("rows owned by the user after down and up: %v, before: %v", after, before)
	}
	violations, err := distributionViolations(ctx, pool, referenceTables)
	if err != nil {
		t.Fatal(err)
	}
	if len(violations) > 0 {
		t.Errorf("after down and up: %s", strings.Join(violations, "; "))
	}
}

// ownedRows counts, per table, the rows whose user_id is user's (and fails
// on a table with none, which would prove nothing).
func ownedRows(t *testing.T, pool *pgxpool.Pool, user uuid.UUID, tables []string) []int {
	t.Helper()
	out := make([]int, len(tables))
	for i, table := range tables {
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` WHERE user_id = $1`,
			user).Scan(&out[i]); err != nil {
			t.Fatal(err)
		}
		if out[i] == 0 {
			t.Fatalf("no row of the user in %s", table)
		}
	}
	return out
}

func newGoose(t *testing.T, pool *pgxpool.Pool) *goose.Provider {
	t.Helper()
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { db.Close() })
	gp, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	return gp
}

// TestDeletingAUserRemovesAllTheirRows deletes a user who owns a row in every
// user-owned table the fixtures reach, grouped categories and securities
// with investment events included (their foreign keys no longer set NULL on
// delete): the deletion succeeds and leaves nothing of the user.
func TestDeletingAUserRemovesAllTheirRows(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	ctx := context.Background()
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanPro, true).ID
	other := fx.User(domain.PlanPro, true).ID
	for _, u := range []uuid.UUID{user, other} {
		conn := fx.Connection(u, "plaid", "active")
		acct := fx.Account(u, conn, "plaid", "Brokerage")
		fx.Category(u, "Food", "Living")
		fx.Holding(u, conn, acct, "ACME")
		if _, err := pool.Exec(ctx, `
			INSERT INTO investment_transactions (user_id, bank_connection_id, account_id, security_id, provider, provider_id,
				date, type, quantity, price, amount, currency)
			SELECT $1, $2, $3, s.id, 'plaid', 'inv-1', '2026-01-02', 'buy', 1, 10, -10, 'USD' FROM securities s WHERE s.user_id = $1`,
			u, conn, acct); err != nil {
			t.Fatal(err)
		}
		fx.Transactions(u, conn, acct, "plaid", []storagetest.Tx{{Amount: "-1.00", Date: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}})
		fx.Balance(u, acct, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), "10.00")
		fx.KeyWithID(u, []uuid.UUID{acct}, nil)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM users WHERE id = $1`, user); err != nil {
		t.Fatalf("delete user: %v", err)
	}
	tables, err := publicTables(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		if _, ok := referenceTables[table]; ok {
			continue
		}
		var mine, theirs int
		if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE user_id = $1), count(*) FILTER (WHERE user_id = $2) FROM `+
			pgx.Identifier{table}.Sanitize(), user, other).Scan(&mine, &theirs); err != nil {
			t.Fatal(err)
		}
		if mine != 0 {
			t.Errorf("%s keeps %d rows of the deleted user", table, mine)
		}
		if theirs == 0 && slices.Contains([]string{"transactions", "categories", "category_groups", "securities",
			"holdings", "investment_transactions", "credential_accounts", "balance_history"}, table) {
			t.Errorf("%s lost the other user's rows", table)
		}
	}
}
