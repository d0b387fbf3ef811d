package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/replaykit/replay/internal/mariadbtest"
	"github.com/replaykit/replay/internal/schematest"
)

// TestSQLCountMySQL: replay sqlcount --protocol mysql in front of MariaDB
// counts what go-sql-driver/mysql sends (a prepared select three times, a
// query string of two statements), and writes the JSON file of the same
// shape as for PostgreSQL.
func TestSQLCountMySQL(t *testing.T) {
	s := mariadbtest.Shared(t)
	jsonPath := filepath.Join(t.TempDir(), "counts.json")
	addr, stop := startSQLCount(t, &sqlcountOptions{upstream: s.Addr(), protocol: "mysql", jsonPath: jsonPath})
	db, err := sql.Open("mysql", s.DSN(addr.String(), "mysql", "multiStatements=true"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT ? + 1", i).Scan(&n); err != nil || n != i+1 {
			t.Fatalf("SELECT ? + 1: %d, %v", n, err)
		}
	}
	if _, err := db.ExecContext(ctx, "SELECT 'a'; SELECT 'b'"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	text, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listening on " + addr.String(), "5 statements, 2 fingerprints", "SELECT ? + ?", "SELECT ?"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Check(t, "sqlcount", b)
	var got struct {
		Statements   int64 `json:"statements"`
		Fingerprints []struct {
			Fingerprint string `json:"fingerprint"`
			Count       int64  `json:"count"`
		} `json:"fingerprints"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Statements != 5 || len(got.Fingerprints) != 2 || got.Fingerprints[0].Fingerprint != "SELECT ? + ?" || got.Fingerprints[0].Count != 3 {
		t.Errorf("json file:\n%s", b)
	}
}

func TestSQLCountProtocolUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"sqlcount", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:3306", "--protocol", "oracle"}
	if code := run(args, streams{in: strings.NewReader(""), out: &out, err: &errOut}); code != exitUsage || !strings.Contains(errOut.String(), "want postgres or mysql") {
		t.Errorf("replay %s: exit %d, stderr %q; want %d and the protocols", strings.Join(args, " "), code, errOut.String(), exitUsage)
	}
}
