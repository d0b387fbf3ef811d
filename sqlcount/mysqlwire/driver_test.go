package mysqlwire

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/internal/mariadbtest"
	"github.com/replaykit/replay/snapshots"
)

// workload runs statements of every kind through pool: DDL, inserts and
// selects with arguments, a transaction, a failing statement, and returns
// how many rows its last select read.
func workload(t *testing.T, ctx context.Context, pool *sql.DB) int {
	t.Helper()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := pool.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), price DECIMAL(8,2))")
	for i := 1; i <= 5; i++ {
		exec("INSERT INTO items (id, name, price) VALUES (?, ?, ?)", i, "item "+strings.Repeat("x", i), float64(i)*1.5)
	}
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE items SET price = price + ? WHERE id = ?", 1, 3); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.ExecContext(ctx, "SELECT * FROM no_such_table WHERE id = ?", 1); err == nil {
		t.Fatal("a select of a missing table succeeded")
	}
	n := 0
	rows, err := pool.QueryContext(ctx, "SELECT id, name FROM items WHERE id >= ? ORDER BY id", 2)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	return n
}

// TestGoDriver runs the workload through the proxy with go-sql-driver/mysql,
// with server-side prepared statements (the binary protocol) and with
// interpolateParams (text only): every statement the server's general log
// has is counted, once, under the fingerprint of its text, and the proxy
// counts nothing else.
func TestGoDriver(t *testing.T) {
	s := mariadbtest.Shared(t)
	for _, mode := range []struct {
		name, param, proto string
	}{
		{"prepared", "interpolateParams=false", snapshots.ProtocolExtended},
		{"interpolated", "interpolateParams=true", snapshots.ProtocolSimple},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			db := mariadbtest.Database(t, s)
			tp := startProxy(t, s.Addr())
			pool := open(t, s, tp.Addr, db, mode.param)
			s.GeneralLog(ctx) // empty it
			if n := workload(t, ctx, pool); n != 4 {
				t.Errorf("select read %d rows, want 4", n)
			}
			pool.Close()
			log, err := s.GeneralLog(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want, wantN := logCounts(log)
			if mode.proto == snapshots.ProtocolExtended {
				// The failed select never ran: its prepare failed, which the
				// log has as a Prepare and the proxy counts as a failed
				// statement, as a failed Parse on PostgreSQL.
				want["SELECT * FROM no_such_table WHERE id = ?"]++
				wantN++
			}
			got, gotN := proxyCounts(tp.statements())
			if gotN != wantN {
				t.Errorf("proxy counted %d statements, the server's log %d", gotN, wantN)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("statements per fingerprint (-server's log +proxy):\n%s", d)
			}
			var selects, failed int
			for _, st := range tp.statements() {
				switch {
				case st.Error != "":
					failed++
					if !strings.HasPrefix(st.Error, "1146 (42S02): ") || st.Fingerprint != "SELECT * FROM no_such_table WHERE id = ?" {
						t.Errorf("failed statement %q: error %q, want 1146 (42S02)", st.Fingerprint, st.Error)
					}
				case st.Fingerprint == "SELECT id, name FROM items WHERE id >= ? ORDER BY id":
					selects++
					if st.Rows != 4 || st.Protocol != mode.proto || st.Conn == 0 || st.Duration <= 0 {
						t.Errorf("select: %d rows, protocol %q, conn %d, duration %v; want 4 rows, %q", st.Rows, st.Protocol, st.Conn, st.Duration, mode.proto)
					}
				case strings.HasPrefix(st.Fingerprint, "INSERT"):
					if st.Rows != 1 {
						t.Errorf("insert: %d rows, want 1", st.Rows)
					}
				}
			}
			if selects != 1 || failed != 1 {
				t.Errorf("%d selects and %d failures counted, want 1 and 1", selects, failed)
			}
			st := tp.Stats()
			if st.Errors != 1 || st.Statements != int64(wantN-1) {
				t.Errorf("Stats: %d statements, %d errors; want %d and 1", st.Statements, st.Errors, wantN-1)
			}
		})
	}
}
