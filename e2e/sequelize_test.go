package e2e_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/replaykit/replay/internal/mariadbtest"
	"github.com/replaykit/replay/internal/schematest"
)

const sequelizeAuthors = 10

// TestSequelizeMySQL: a Sequelize service on MariaDB whose candidate turns
// GET /authors into an N+1 (Sequelize's lazy association getter). `replay
// record --mysql` records it, and `replay compare --mysql` names the N+1,
// with statements per request equal to what the server's general log has
// for one request of each build.
func TestSequelizeMySQL(t *testing.T) {
	modules := filepath.Join(nodeDir(), "mysql", "node_modules")
	need(t, "Sequelize", filepath.Join(modules, "sequelize", "package.json"))
	s := mariadbtest.New(t, mariadbtest.Config{GeneralLog: true})
	ctx := context.Background()
	db, err := s.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, db)
	app := "exec node " + filepath.Join(mustAbs(t, "testdata/sequelize"), "app.js")
	env := []string{"NODE_PATH=" + modules}
	url := func(addr string) string {
		return fmt.Sprintf("mysql://%s:%s@%s/%s", mariadbtest.User, mariadbtest.Password, addr, db)
	}
	list := endpoint{"GET /authors", func(int) (string, string, []byte) { return "GET", "/authors", nil }}
	one := endpoint{"GET /authors/{id}", func(i int) (string, string, []byte) {
		return "GET", fmt.Sprintf("/authors/%d", i%sequelizeAuthors+1), nil
	}}

	// The truth: the general log's statements for one request of each
	// endpoint of each build, the app warmed up.
	truth := map[string]float64{}
	for _, slow := range []string{"0", "1"} {
		port := freePort(t)
		p := start(t, "sequelize", app, append(env, fmt.Sprintf("PORT=%d", port), "APP_SLOW="+slow, "MYSQL_URL="+url(s.Addr()))...)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		waitHTTP(t, p, base+"/")
		for _, ep := range []endpoint{list, one} {
			drive(t, base, ep, 4, 1)
			s.GeneralLog(ctx)
			drive(t, base, ep, 1, 1)
			log, err := s.GeneralLog(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range log {
				if e.Command == "Query" || e.Command == "Execute" {
					n++
				}
			}
			truth[slow+" "+ep.name] = float64(n)
		}
		p.stop(syscall.SIGTERM)
	}
	t.Logf("general log, statements per request: %v", truth)
	if truth["0 GET /authors"] != 1 || truth["1 GET /authors"] != 1+sequelizeAuthors {
		t.Fatalf("the app does not behave as built: %v", truth)
	}

	// Record through replay.
	dir := t.TempDir()
	snap := filepath.Join(dir, "sequelize.snap")
	appPort, inPort, myPort := freePort(t), freePort(t), freePort(t)
	inAddr, myAddr := fmt.Sprintf("127.0.0.1:%d", inPort), fmt.Sprintf("127.0.0.1:%d", myPort)
	rec := start(t, "replay record", fmt.Sprintf("exec %q record --out %q --inbound %s=http://127.0.0.1:%d --mysql %s=%s",
		replayBin, snap, inAddr, appPort, myAddr, s.Addr()))
	waitTCP(t, rec, myAddr)
	waitTCP(t, rec, inAddr)
	srv := start(t, "sequelize", app, append(env, fmt.Sprintf("PORT=%d", appPort), "APP_SLOW=0", "MYSQL_URL="+url(myAddr))...)
	waitHTTP(t, srv, fmt.Sprintf("http://127.0.0.1:%d/", appPort))
	drive(t, "http://"+inAddr, list, 20, 2)
	drive(t, "http://"+inAddr, one, 20, 2)
	srv.stop(syscall.SIGTERM)
	if err := rec.stop(syscall.SIGINT); err != nil {
		t.Fatalf("replay record: %v\n%s", err, tail(rec.out.String()))
	}
	if out := rec.out.String(); !strings.Contains(out, "mysql "+myAddr) {
		t.Errorf("replay record does not say it counts MySQL on %s:\n%s", myAddr, tail(out))
	}
	out, _ := replay(t, "inspect", "--format", "json", snap)
	var inv struct {
		Statements int64 `json:"statements"`
		Endpoints  []struct {
			Endpoint      string  `json:"endpoint"`
			SQLPerRequest float64 `json:"sql_per_request"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(out, &inv); err != nil {
		t.Fatal(err)
	}
	if inv.Statements < 40 {
		t.Errorf("the snapshot has %d statements, want at least the 40 requests' own", inv.Statements)
	}

	// Compare the build with its N+1 twin; its MYSQL_URL says localhost
	// where --mysql says 127.0.0.1: rewritten by address, not text.
	out, stderr, code := replayCode(t, "compare", "--snapshot", snap, "--baseline-cmd", app, "--candidate-cmd", app,
		"--env", "NODE_PATH="+modules, "--env", "MYSQL_URL="+url(fmt.Sprintf("localhost:%d", s.Port)), "--baseline-env", "APP_SLOW=0", "--candidate-env", "APP_SLOW=1",
		"--mysql", s.Addr(), "--vus", "2", "--duration", "3s", "--out", filepath.Join(dir, "cmp"), "--format", "json")
	schematest.Check(t, "comparison", out)
	var cmp struct {
		Verdict   string `json:"verdict"`
		Endpoints []struct {
			Endpoint    string `json:"endpoint"`
			Explanation string `json:"explanation"`
			Baseline    struct {
				SQLPerRequest float64 `json:"sql_per_request"`
			} `json:"baseline"`
			Candidate struct {
				SQLPerRequest float64 `json:"sql_per_request"`
			} `json:"candidate"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(out, &cmp); err != nil {
		t.Fatalf("compare --format json: %v\n%s\n%s", err, out, tail(stderr))
	}
	if code != 99 || cmp.Verdict != "regression" {
		t.Errorf("compare: exit %d, verdict %q; want 99 and regression\n%s\n%s", code, cmp.Verdict, out, tail(stderr))
	}
	seen := 0
	for _, e := range cmp.Endpoints {
		b, c := truth["0 "+e.Endpoint], truth["1 "+e.Endpoint]
		if e.Baseline.SQLPerRequest != b || e.Candidate.SQLPerRequest != c {
			t.Errorf("%s: SQL per request %.2f → %.2f, the server's log %.0f → %.0f", e.Endpoint, e.Baseline.SQLPerRequest, e.Candidate.SQLPerRequest, b, c)
		}
		if e.Endpoint == list.name {
			seen++
			if !strings.Contains(e.Explanation, "N+1") || !strings.Contains(e.Explanation, "`Books`") {
				t.Errorf("GET /authors: explanation %q does not name the N+1 on Books", e.Explanation)
			}
		} else if e.Endpoint == one.name {
			seen++
		}
	}
	if seen != 2 {
		t.Errorf("compare has %d of the 2 endpoints:\n%s", seen, out)
	}
	// The report a user reads, from the run files again.
	text, _ := replay(t, "compare", filepath.Join(dir, "cmp", "baseline.run"), filepath.Join(dir, "cmp", "candidate.run"))
	if !strings.Contains(string(text), "N+1") {
		t.Errorf("the text report does not name the N+1:\n%s", text)
	}
	t.Logf("replay compare (text):\n%s", text)
}

// seed makes Sequelize's tables, sequelizeAuthors authors of 3 books each.
func seed(t *testing.T, s *mariadbtest.Server, db string) {
	t.Helper()
	pool, err := sql.Open("mysql", s.DSN(s.Addr(), db))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, q := range []string{
		"CREATE TABLE Authors (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(255))",
		"CREATE TABLE Books (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(255), AuthorId INT, INDEX (AuthorId))",
	} {
		if _, err := pool.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for a := 1; a <= sequelizeAuthors; a++ {
		if _, err := pool.Exec("INSERT INTO Authors (id, name) VALUES (?, ?)", a, fmt.Sprintf("Author %d", a)); err != nil {
			t.Fatal(err)
		}
		for b := 1; b <= 3; b++ {
			if _, err := pool.Exec("INSERT INTO Books (title, AuthorId) VALUES (?, ?)", fmt.Sprintf("Book %d.%d", a, b), a); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
