//go:build fleet

package fleet

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/internal/pgcluster"
)

// testReadsOnReplica checks, on the fleet's two serve processes reading
// from a streaming standby (FINSYNC_READ_DATABASE_URL): with replay paused,
// an account created through one process is read back at once through the
// other (served by the primary), while another user's reads stay on the
// replica; with replay resumed, the writer's reads return to the replica.
func testReadsOnReplica(t *testing.T, h *harness, a, b *process, standby *pgcluster.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, writerKey, _ := h.User("replica-writer@example.com", "standard")
	_, otherKey, _ := h.User("replica-reader@example.com", "standard")
	writer, other := newClient(t, writerKey), newClient(t, otherKey)

	for _, p := range []*process{a, b} {
		if _, ok := eventually(time.Minute, func() bool { return metric(t, p, "finsync_read_replica_usable") == 1 }); !ok {
			t.Fatalf("%s never used the replica:\n%s", p.name, h.logTail(p))
		}
	}
	rconn, err := pgx.Connect(ctx, standby.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer rconn.Close(ctx)
	if _, err := rconn.Exec(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	if _, ok := eventually(time.Minute, func() bool {
		var state string
		return rconn.QueryRow(ctx, `SELECT pg_get_wal_replay_pause_state()`).Scan(&state) == nil && state == "paused"
	}); !ok {
		t.Fatal("replay never paused")
	}

	var created struct{ Account struct{ ID string } }
	writer.MustJSON(a, http.MethodPost, "/v2/accounts", map[string]string{"name": "Cash", "type": "cash", "currency": "USD"}, http.StatusCreated, &created)
	replicaBefore, primaryBefore := reads(t, b)
	var got struct{ Account struct{ ID, Name string } }
	writer.MustJSON(b, http.MethodGet, "/v2/accounts/"+created.Account.ID, nil, http.StatusOK, &got)
	if got.Account.ID != created.Account.ID || got.Account.Name != "Cash" {
		t.Fatalf("account created on %s read on %s as %+v", a.name, b.name, got)
	}
	replicaAfter, primaryAfter := reads(t, b)
	if replicaAfter != replicaBefore || primaryAfter == primaryBefore {
		t.Fatalf("writer's read on %s: replica reads %v→%v, primary %v→%v; want it on the primary",
			b.name, replicaBefore, replicaAfter, primaryBefore, primaryAfter)
	}
	other.MustJSON(b, http.MethodGet, "/v2/accounts", nil, http.StatusOK, nil)
	if r, _ := reads(t, b); r == replicaAfter {
		t.Fatalf("other user's read on %s did not go to the replica", b.name)
	}

	if _, err := rconn.Exec(ctx, `SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
	took, ok := eventually(time.Minute, func() bool {
		before, _ := reads(t, b)
		writer.MustJSON(b, http.MethodGet, "/v2/accounts/"+created.Account.ID, nil, http.StatusOK, nil)
		after, _ := reads(t, b)
		return after > before
	})
	if !ok {
		t.Fatal("writer's reads never returned to the replica after replay resumed")
	}
	t.Logf("writer's reads back on the replica %v after replay resumed", took.Round(time.Millisecond))
}

// reads returns the process's routed reads on the replica and on the primary.
func reads(t *testing.T, p *process) (replica, primary float64) {
	return metric(t, p, `finsync_db_reads_total{server="replica"}`), metric(t, p, `finsync_db_reads_total{server="primary"}`)
}

// metric reads one sample from the process's /metrics; -1 when absent.
func metric(t *testing.T, p *process, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + p.ops + "/metrics")
	if err != nil {
		t.Fatalf("metrics of %s: %v", p.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("metrics of %s: %v", p.name, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("metric %s = %q", name, rest)
			}
			return v
		}
	}
	return -1
}
