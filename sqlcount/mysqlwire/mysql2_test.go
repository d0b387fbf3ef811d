package mysqlwire

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/internal/mariadbtest"
)

// nodeModules returns the directory that holds mysql2 and Sequelize
// (.ci/run installs them under REPLAY_E2E_NODE_DIR); outside CI the test
// skips without them.
func nodeModules(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("REPLAY_E2E_NODE_DIR")
	if dir == "" {
		dir = "/var/cache/replay-e2e"
	}
	nm := filepath.Join(dir, "mysql", "node_modules")
	if _, err := os.Stat(filepath.Join(nm, "mysql2", "package.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mysql2 not installed in %s (.ci/run installs it)", nm)
		}
		t.Skipf("mysql2 not installed in %s (.ci/run installs it)", nm)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found")
	}
	return nm
}

// TestNodeMySQL2 runs a workload of Node's mysql2 driver through the proxy:
// text queries, execute (prepared, binary), a query string of three
// statements, an error, COM_PING, COM_CHANGE_USER and compression asked
// for (the proxy does not offer it). Every statement of the server's
// general log is counted once under its fingerprint, and nothing else.
func TestNodeMySQL2(t *testing.T) {
	nm := nodeModules(t)
	s := mariadbtest.Shared(t)
	db := mariadbtest.Database(t, s)
	tp := startProxy(t, s.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.GeneralLog(ctx)
	host, port, _ := strings.Cut(tp.Addr, ":")
	cmd := exec.CommandContext(ctx, "node", "testdata/mysql2.js", host, port, mariadbtest.User, mariadbtest.Password, db)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nm)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("node mysql2.js: %v\n%s", err, out)
	}
	log, err := s.GeneralLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, wantN := logCounts(log)
	got, gotN := proxyCounts(tp.statements())
	if gotN != wantN {
		t.Errorf("proxy counted %d statements, the server's log %d", gotN, wantN)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("statements per fingerprint (-server's log +proxy):\n%s", d)
	}
	for _, st := range tp.statements() {
		if st.Fingerprint == "SELECT id, title FROM books WHERE year > ?" && st.Rows != 3 {
			t.Errorf("the executed select read %d rows, want 3", st.Rows)
		}
	}
	if st := tp.Stats(); st.Errors != 1 {
		t.Errorf("%d errors counted, want 1", st.Errors)
	}
}
