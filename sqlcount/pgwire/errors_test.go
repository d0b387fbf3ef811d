package pgwire

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/snapshots"
)

// TestRejectedStatements: a statement the server rejects (a unique
// violation, a syntax error, a missing table) counts as an error of its
// fingerprint, in the totals and in the request it belongs to, not as a
// completed statement; in the simple and in the extended protocol.
func TestRejectedStatements(t *testing.T) {
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		t.Run(mode.String(), func(t *testing.T) {
			tp, url, _ := proxied(t)
			conn := connect(t, url, mode)
			ctx := context.Background()
			if _, err := conn.Exec(ctx, "CREATE TABLE orders (id int PRIMARY KEY, note text)"); err != nil {
				t.Fatal(err)
			}
			const insert = "INSERT INTO orders (id, note) VALUES ($1, $2)"
			tp.Begin(1, "")
			for _, id := range []int{1, 2, 1, 2, 1} { // the last three are duplicates
				conn.Exec(ctx, insert, id, "n")
			}
			if _, err := conn.Exec(ctx, "SELECT id FROM missing WHERE id = $1", 1); err == nil {
				t.Fatal("query of a missing table succeeded")
			}
			if _, err := conn.Exec(ctx, "SELEC 1"); err == nil {
				t.Fatal("syntax error succeeded")
			}
			got := tp.End(1)
			for i := range got {
				// Only completed statements take time.
				if (got[i].Count == 0) != (got[i].Duration == 0) {
					t.Errorf("%q: %d completed in %v", got[i].Fingerprint, got[i].Count, got[i].Duration)
				}
				got[i].Duration = 0
			}

			insertFP := "INSERT INTO orders (id, note) VALUES (?)"
			want := []snapshots.SQLCount{
				{Fingerprint: insertFP, Count: 2, Errors: 3},
				{Fingerprint: "SELECT id FROM missing WHERE id = ?", Errors: 1},
				{Fingerprint: "SELEC ?", Errors: 1},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("request's counts (-want +got):\n%s", diff)
			}

			st := tp.Stats()
			if st.Statements != 3 || st.Errors != 5 {
				t.Errorf("Stats: %d statements, %d errors; want 3 (CREATE TABLE and two INSERTs) and 5", st.Statements, st.Errors)
			}
			byFP := map[string]FingerprintStats{}
			for _, f := range st.Fingerprints {
				byFP[f.Fingerprint] = f
			}
			if f := byFP[insertFP]; f.Count != 2 || f.Errors != 3 || f.Mean != f.Total/2 {
				t.Errorf("Stats of the INSERT: %+v, want 2 completed and 3 errors", f)
			}
			if f := byFP["SELEC ?"]; f.Count != 0 || f.Errors != 1 || f.Total != 0 || f.Mean != 0 {
				t.Errorf("Stats of the syntax error: %+v, want 1 error and no time", f)
			}
			// Each statement is still reported, with the server's error.
			failed := 0
			for _, s := range tp.statements() {
				if s.Error != "" {
					failed++
				}
			}
			if failed != 5 {
				t.Errorf("%d statements reported with an error, want 5", failed)
			}
		})
	}
}
