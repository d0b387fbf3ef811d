package mariadbtest

import (
	"context"
	"database/sql"
	"os"
	"testing"

	_ "github.com/go-sql-driver/mysql"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestServer starts the shared server, runs two statements as the clients'
// account and finds them in the general log.
func TestServer(t *testing.T) {
	s := Shared(t)
	ctx := context.Background()
	name := Database(t, s)
	db, err := sql.Open("mysql", s.DSN(s.Addr(), name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := s.GeneralLog(ctx); err != nil {
		t.Fatal(err)
	}
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1 /* mark */").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	log, err := s.GeneralLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	for _, e := range log {
		if e.Command == "Query" {
			queries = append(queries, e.Argument)
		}
	}
	if len(queries) != 2 || queries[0] != "SELECT 1 /* mark */" || queries[1] != "CREATE TABLE t (id INT PRIMARY KEY)" {
		t.Errorf("general log queries = %q, want the two statements", queries)
	}
}
