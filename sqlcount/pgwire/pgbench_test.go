package pgwire

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/snapshots"
)

// pgbenchTransaction is what one transaction of pgbench's built-in
// tpcb-like script runs, as fingerprints.
var pgbenchTransaction = []string{
	"BEGIN",
	"UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?",
	"SELECT abalance FROM pgbench_accounts WHERE aid = ?",
	"UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?",
	"UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?",
	"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)",
	"END",
}

// pgbenchSetup is what pgbench (15) runs once, on its own connection, before
// the clients start (with vacuum, i.e. without -n), in every -M mode: it
// uses the simple protocol for these. Measured with log_statement=all.
var pgbenchSetup = []string{
	"select count(*) from pgbench_branches",
	"select o.n, p.partstrat, pg_catalog.count(i.inhparent) from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(?), n.nspname)) as o(n) left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) where c.relname = ? and o.n is not null group by ?, ? order by ? asc limit ?",
	"vacuum pgbench_branches",
	"vacuum pgbench_tellers",
	"truncate pgbench_history",
}

// serverLogStatements matches a statement the server logs with
// log_statement=all: simple ("statement: …") or extended ("execute …").
var serverLogStatements = regexp.MustCompile(`(?m)LOG:  (statement|execute [^:]*):`)

func TestPgbench(t *testing.T) {
	c := pgtest.New(t, pgtest.Config{Settings: map[string]string{"log_statement": "all"}})
	runTool(t, "pgbench", "-i", "-q", "-s", "1", "-h", c.Host, "-p", itoa(c.Port), "-U", c.User, "postgres")
	logPath := filepath.Join(c.Dir, "postgres.log")

	const clients, perClient = 2, 50
	const transactions = clients * perClient
	for _, mode := range []string{"simple", "extended", "prepared"} {
		t.Run(mode, func(t *testing.T) {
			tp := startProxy(t, c.Addr())
			before, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			runTool(t, "pgbench", "-M", mode, "-t", itoa(perClient), "-c", itoa(clients),
				"-h", tp.Host, "-p", itoa(tp.Port), "-U", c.User, "postgres")
			after, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			logged := len(serverLogStatements.FindAllIndex(after[len(before):], -1))

			st := tp.Stats()
			want := int64(7*transactions + len(pgbenchSetup))
			if st.Statements != want {
				t.Errorf("counted %d statements, want 7 × %d transactions + %d setup = %d", st.Statements, transactions, len(pgbenchSetup), want)
			}
			if int64(logged) != want {
				t.Errorf("the server logged %d statements, want %d", logged, want)
			}
			wantCounts := map[string]int64{}
			for _, fp := range pgbenchTransaction {
				wantCounts[fp] = transactions
			}
			for _, fp := range pgbenchSetup {
				wantCounts[fp] = 1
			}
			gotCounts := map[string]int64{}
			for _, f := range st.Fingerprints {
				gotCounts[f.Fingerprint] = f.Count
			}
			if diff := cmp.Diff(wantCounts, gotCounts); diff != "" {
				t.Errorf("count per fingerprint (-want +got):\n%s", diff)
			}

			// Every statement was reported, with the protocol it used.
			stmts := tp.statements()
			if int64(len(stmts)) != want {
				t.Fatalf("OnStatement saw %d statements, want %d", len(stmts), want)
			}
			wantProto := snapshots.ProtocolExtended
			if mode == "simple" {
				wantProto = snapshots.ProtocolSimple
			}
			protos := map[string]int{}
			for _, s := range stmts {
				if s.Fingerprint == "BEGIN" || s.Fingerprint == "END" || s.Fingerprint == pgbenchTransaction[1] {
					protos[s.Protocol]++
				}
				if s.Error != "" {
					t.Errorf("statement %q failed: %s", s.SQL, s.Error)
				}
				if s.Fingerprint != "BEGIN" && s.Fingerprint != "END" && slices.Contains(pgbenchTransaction, s.Fingerprint) && s.Rows != 1 {
					t.Errorf("statement %q (%s): %d rows, want 1", s.SQL, s.CommandTag, s.Rows)
				}
				if s.Conn == 0 || s.Start.IsZero() || s.Duration <= 0 {
					t.Errorf("statement %q: conn %d, start %v, duration %v", s.SQL, s.Conn, s.Start, s.Duration)
				}
			}
			if diff := cmp.Diff(map[string]int{wantProto: 3 * transactions}, protos); diff != "" {
				t.Errorf("protocols (-want +got):\n%s", diff)
			}
		})
	}
}
