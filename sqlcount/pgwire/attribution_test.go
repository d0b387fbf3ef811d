package pgwire

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/snapshots"
)

// counts turns End's result into fingerprint -> count.
func counts(c []snapshots.SQLCount) map[string]int {
	m := map[string]int{}
	for _, x := range c {
		m[x.Fingerprint] += x.Count
		if x.Duration <= 0 {
			m["(no duration) "+x.Fingerprint]++
		}
	}
	return m
}

func TestAttributionByTraceparent(t *testing.T) {
	tp, url, _ := proxied(t)
	const requests, perRequest = 6, 5
	conns := make([]*pgx.Conn, requests)
	for i := range conns {
		conns[i] = connect(t, url, pgx.QueryExecModeCacheStatement)
	}
	// Every request is in flight for the whole test, so only the
	// traceparent can attribute.
	traces := make([]string, requests)
	for i := range requests {
		traces[i] = fmt.Sprintf("%032x", 0xabc000+i)
		tp.Begin(int64(100+i), traces[i])
	}
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for i := range requests {
		wg.Go(func() {
			ctx := context.Background()
			for j := range perRequest {
				q := fmt.Sprintf("SELECT %d + $1::int /*traceparent='00-%s-00f067aa0ba902b7-01'*/", i, traces[i])
				if j%2 == 1 {
					// URL-encoded, and a statement of its own in the simple protocol
					q = fmt.Sprintf("SELECT %d /*traceparent%%3D'00-%s-00f067aa0ba902b7-01'*/", i, traces[i])
					if _, err := conns[i].Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
						errs <- err
					}
					continue
				}
				if _, err := conns[i].Exec(ctx, q, j); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// An untraced statement while several are in flight is not attributed.
	if _, err := conns[0].Exec(context.Background(), "SELECT 'untraced'"); err != nil {
		t.Fatal(err)
	}
	for i := range requests {
		got := counts(tp.End(int64(100 + i)))
		want := map[string]int{"SELECT ? + ?::int": 3, "SELECT ?": 2}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d (-want +got):\n%s", i, diff)
		}
	}
	for _, s := range tp.statements() {
		if s.SQL == "SELECT 'untraced'" {
			if s.ExchangeID != 0 || s.TraceID != "" {
				t.Errorf("untraced statement attributed to %d (trace %q)", s.ExchangeID, s.TraceID)
			}
			continue
		}
		if s.ExchangeID < 100 || s.TraceID != traces[s.ExchangeID-100] {
			t.Errorf("statement %q: exchange %d, trace %q", s.SQL, s.ExchangeID, s.TraceID)
		}
	}
	if st := tp.Stats(); st.Statements != requests*perRequest+1 {
		t.Errorf("Stats().Statements = %d, want %d", st.Statements, requests*perRequest+1)
	}
}

func TestAttributionOneInFlight(t *testing.T) {
	tp, url, db := proxied(t)
	conn := connect(t, url, pgx.QueryExecModeCacheStatement)
	direct := connect(t, pgtest.Shared(t).URL(db), pgx.QueryExecModeCacheStatement) // not counted
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}

	// Exactly one request in flight: its window attributes.
	tp.Begin(1, "")
	for i := range 3 {
		exec("SELECT $1::int", i)
	}
	exec("SELECT 1; SELECT 2")
	if err := conn.Ping(ctx); err != nil { // a pool's ping is not the request's
		t.Fatal(err)
	}
	got := counts(tp.End(1))
	if diff := cmp.Diff(map[string]int{"SELECT ?::int": 3, "SELECT ?": 2}, got); diff != "" {
		t.Errorf("one in flight (-want +got):\n%s", diff)
	}

	// Two in flight, no traceparent: totals only.
	before := tp.Stats().Statements
	tp.Begin(2, "")
	tp.Begin(3, "")
	exec("SELECT $1::int", 7)
	if c := tp.End(2); len(c) != 0 {
		t.Errorf("request 2 of two in flight got %v", c)
	}
	exec("SELECT $1::int", 8) // request 3 is alone for the whole statement
	if diff := cmp.Diff(map[string]int{"SELECT ?::int": 1}, counts(tp.End(3))); diff != "" {
		t.Errorf("request 3, alone after 2 ended (-want +got):\n%s", diff)
	}
	if got := tp.Stats().Statements - before; got != 2 {
		t.Errorf("totals grew by %d, want 2", got)
	}

	// A statement that began before the request did is not the request's.
	// It waits for a lock that another direct connection holds, so the
	// test decides when it completes.
	other := connect(t, url, pgx.QueryExecModeCacheStatement)
	locker := connect(t, pgtest.Shared(t).URL(db), pgx.QueryExecModeCacheStatement)
	const blocked = "SELECT pg_advisory_xact_lock(4242)"
	lock := func() pgx.Tx {
		tx, err := locker.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(4242)"); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	done := make(chan error, 1)
	held := lock()
	go func() {
		_, err := other.Exec(ctx, blocked)
		done <- err
	}()
	waitActive(t, direct, blocked)
	tp.Begin(4, "")
	held.Commit(ctx)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := tp.End(4); len(c) != 0 {
		t.Errorf("a statement started before the request was attributed to it: %v", c)
	}

	// Nor one whose request ended before it completed.
	held = lock()
	tp.Begin(5, "")
	go func() {
		_, err := other.Exec(ctx, blocked)
		done <- err
	}()
	waitActive(t, direct, blocked)
	if c := tp.End(5); len(c) != 0 {
		t.Errorf("request 5 ended before its statement completed, yet got %v", c)
	}
	held.Commit(ctx)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range tp.statements() {
		if s.SQL == blocked {
			n++
			if s.ExchangeID != 0 {
				t.Errorf("blocked statement attributed to %d", s.ExchangeID)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d blocked statements seen, want 2", n)
	}
	if tp.End(99) != nil {
		t.Error("End of an unknown request returned counts")
	}
}

// waitActive waits until a query is running on the server. conn must not be
// in a transaction (pg_stat_activity is a snapshot per transaction).
func waitActive(t *testing.T, conn *pgx.Conn, query string) {
	t.Helper()
	if err := awaitActive(conn, query); err != nil {
		t.Fatal(err)
	}
}

func awaitActive(conn *pgx.Conn, query string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := conn.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query = $1", query).Scan(&n)
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("%q did not start", query)
}
