package mysqlwire

import (
	"context"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/internal/mariadbtest"
	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// sysbench runs Debian's sysbench with a lua test against addr.
func sysbench(t *testing.T, s *mariadbtest.Server, addr, db, test, command string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("sysbench")
	if err != nil {
		t.Fatal("sysbench not found (install Debian's sysbench)")
	}
	host, port, _ := strings.Cut(addr, ":")
	all := append([]string{test, "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + port,
		"--mysql-user=" + mariadbtest.User, "--mysql-password=" + mariadbtest.Password, "--mysql-db=" + db,
		"--tables=1", "--table-size=1000", "--rand-type=uniform"}, args...)
	all = append(all, command)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, all...).CombinedOutput()
	if err != nil {
		t.Fatalf("sysbench %s: %v\n%s", strings.Join(all, " "), err, out)
	}
	return string(out)
}

// TestSysbenchKnownAnswer runs sysbench's oltp_read_write through the proxy
// with server-side prepared statements (--db-ps-mode=auto) and with text
// queries (=disable), with the client asking for compression (which the
// proxy does not offer) and as replay sqlcount relays: the statements and the count per fingerprint equal the server's
// general log exactly.
func TestSysbenchKnownAnswer(t *testing.T) {
	s := mariadbtest.Shared(t)
	db := mariadbtest.Database(t, s)
	sysbench(t, s, s.Addr(), db, "oltp_read_write", "prepare")
	for _, mode := range []struct {
		name  string
		args  []string
		setup func(*Config)
	}{
		{"prepared", []string{"--db-ps-mode=auto"}, nil},
		{"text", []string{"--db-ps-mode=disable"}, nil},
		{"compression asked", []string{"--db-ps-mode=auto", "--mysql-compression=on"}, nil},
		// As replay sqlcount relays: a loop per core (the two connections
		// on two loops), answers decoded after they are relayed.
		{"own process", []string{"--db-ps-mode=auto"}, sqlcore.OwnProcess},
	} {
		t.Run(mode.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0)) // OwnProcess raises it
			var setup []func(*Config)
			if mode.setup != nil {
				setup = append(setup, mode.setup)
			}
			tp := startProxy(t, s.Addr(), setup...)
			ctx := context.Background()
			s.GeneralLog(ctx)
			out := sysbench(t, s, tp.Addr, db, "oltp_read_write", "run", append([]string{"--threads=2", "--events=100", "--time=0"}, mode.args...)...)
			log, err := s.GeneralLog(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want, wantN := logCounts(log)
			got, gotN := proxyCounts(tp.statementsOnce(wantN))
			if gotN != wantN || wantN < 100*18 {
				t.Errorf("proxy counted %d statements, the server's log %d (want at least %d)", gotN, wantN, 100*18)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("statements per fingerprint (-server's log +proxy):\n%s", d)
			}
			// Rows too: each point select reads one (the result set framed
			// right, with its column EOF or without, as the client asked).
			for _, st := range tp.statements() {
				if st.Fingerprint == "SELECT c FROM sbtest1 WHERE id = ?" && st.Rows != 1 {
					t.Fatalf("a point select read %d rows, want 1", st.Rows)
				}
			}
			if !strings.Contains(out, "transactions:                        100 ") {
				t.Errorf("sysbench did not run 100 transactions:\n%s", out)
			}
			t.Logf("%s: %d statements, %d fingerprints", mode.name, gotN, len(got))
		})
	}
}
