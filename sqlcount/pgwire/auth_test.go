package pgwire

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/replaykit/replay/internal/pgtest"
)

// TestAuthentication connects through the proxy with trust, md5 and
// SCRAM-SHA-256 authentication: the proxy relays the exchanges untouched.
func TestAuthentication(t *testing.T) {
	c := pgtest.New(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, q := range []string{
		"SET password_encryption = 'md5'",
		"CREATE ROLE md5user LOGIN PASSWORD 'md5 secret'",
		"SET password_encryption = 'scram-sha-256'",
		"CREATE ROLE scramuser LOGIN PASSWORD 'scram secret'",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	hba := filepath.Join(c.Dir, "data", "pg_hba.conf")
	old, err := os.ReadFile(hba)
	if err != nil {
		t.Fatal(err)
	}
	rules := "host all md5user 127.0.0.1/32 md5\nhost all scramuser 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(hba, append([]byte(rules), old...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}

	tp := startProxy(t, c.Addr())
	through := func(user, password string) string {
		u := url.URL{Scheme: "postgres", Host: tp.Addr, Path: "/postgres", RawQuery: "sslmode=prefer"}
		u.User = url.UserPassword(user, password)
		if password == "" {
			u.User = url.User(user)
		}
		return u.String()
	}
	// The reload is asynchronous: wait until a wrong password is refused.
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, through("scramuser", "wrong"))
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "28P01" {
			break
		}
		if err == nil {
			conn.Close(ctx)
		}
		if time.Now().After(deadline) {
			t.Fatalf("password authentication not in force: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	for _, tc := range []struct{ name, user, password string }{
		{"trust", c.User, ""},
		{"md5", "md5user", "md5 secret"},
		{"scram-sha-256", "scramuser", "scram secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := pgx.Connect(ctx, through(tc.user, tc.password))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var who string
			if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&who); err != nil || who != tc.user {
				t.Fatalf("current_user = %q, %v", who, err)
			}
			if tc.password == "" {
				return
			}
			// lib/pq speaks md5 and SCRAM too.
			db, err := sql.Open("postgres", through(tc.user, tc.password))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.QueryRowContext(ctx, "SELECT current_user").Scan(&who); err != nil || who != tc.user {
				t.Fatalf("lib/pq: current_user = %q, %v", who, err)
			}
			// A wrong password is refused as it would be directly.
			_, err = pgx.Connect(ctx, through(tc.user, "wrong"))
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
				t.Fatalf("wrong password: %v, want 28P01", err)
			}
		})
	}
}

// TestCancelRequest cancels a running statement through the proxy: pgx
// sends a CancelRequest on a new connection when the context ends.
func TestCancelRequest(t *testing.T) {
	tp, url, db := proxied(t)
	direct := connect(t, pgtest.Shared(t).URL(db), pgx.QueryExecModeCacheStatement)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, CancelRequestDelay: 0, DeadlineDelay: time.Minute}
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if err := awaitActive(direct, "SELECT pg_sleep(120)"); err != nil {
			t.Error(err)
		}
		cancel()
	}()
	_, err = conn.Exec(ctx, "SELECT pg_sleep(120)")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("Exec = %v, want query_canceled (57014)", err)
	}
	stmts := tp.statements()
	if len(stmts) != 1 || stmts[0].SQL != "SELECT pg_sleep(120)" || stmts[0].Error != "57014: canceling statement due to user request" {
		t.Fatalf("statements = %+v", summarize(stmts))
	}
	// The connection goes on.
	if _, err := conn.Exec(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if n := len(tp.statements()); n != 2 {
		t.Errorf("%d statements, want 2", n)
	}
}
