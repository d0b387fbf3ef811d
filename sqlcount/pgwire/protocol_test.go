package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/replaykit/replay/internal/pgtest"
)

// rawConn is a hand-driven frontend through the proxy, for what drivers
// don't send (GSSENCRequest, row limits, broken pipelines).
type rawConn struct {
	t    *testing.T
	conn net.Conn
	fe   *pgproto3.Frontend
}

func dialRaw(t *testing.T, addr, user, db string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(time.Minute))
	rc := &rawConn{t: t, conn: conn, fe: pgproto3.NewFrontend(conn, conn)}
	// Encryption requests first: the proxy refuses both with 'N'.
	for _, req := range []pgproto3.FrontendMessage{&pgproto3.GSSEncRequest{}, &pgproto3.SSLRequest{}} {
		rc.send(req)
		var b [1]byte
		if _, err := io.ReadFull(conn, b[:]); err != nil || b[0] != 'N' {
			t.Fatalf("answer to %T = %q, %v; want 'N'", req, b[:], err)
		}
	}
	rc.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": user, "database": db}})
	rc.until('Z')
	return rc
}

func (rc *rawConn) send(msgs ...pgproto3.FrontendMessage) {
	rc.t.Helper()
	for _, m := range msgs {
		rc.fe.Send(m)
	}
	if err := rc.fe.Flush(); err != nil {
		rc.t.Fatal(err)
	}
}

// until reads messages up to one of type typ and returns their types.
func (rc *rawConn) until(typ byte) string {
	rc.t.Helper()
	var seen strings.Builder
	for {
		m, err := rc.fe.Receive()
		if err != nil {
			rc.t.Fatalf("receive: %v (after %q)", err, seen.String())
		}
		b, _ := m.Encode(nil)
		seen.WriteByte(b[0])
		if b[0] == typ {
			return seen.String()
		}
	}
}

func TestProtocolDetails(t *testing.T) {
	tp, _, db := proxied(t)
	c := pgtest.Shared(t)
	rc := dialRaw(t, tp.Addr, c.User, db)

	// A portal run in pieces (row limit) is one statement with all its rows.
	rc.send(
		&pgproto3.Parse{Name: "series", Query: "SELECT generate_series(1, $1::int)"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "series", Parameters: [][]byte{[]byte("5")}},
		&pgproto3.Execute{Portal: "p", MaxRows: 2},
		&pgproto3.Execute{Portal: "p", MaxRows: 2},
		&pgproto3.Execute{Portal: "p"},
		&pgproto3.Sync{},
	)
	if got := rc.until('Z'); got != "12DDsDDsDCZ" {
		t.Errorf("server said %q", got)
	}
	// A portal closed before it ran out counts with the rows it gave.
	rc.send(
		&pgproto3.Query{String: "BEGIN"},
	)
	rc.until('Z')
	rc.send(
		&pgproto3.Bind{DestinationPortal: "q", PreparedStatement: "series", Parameters: [][]byte{[]byte("10")}},
		&pgproto3.Execute{Portal: "q", MaxRows: 3},
		&pgproto3.Close{ObjectType: 'P', Name: "q"},
		&pgproto3.Sync{},
	)
	rc.until('Z')
	rc.send(&pgproto3.Query{String: "COMMIT"})
	rc.until('Z')

	// In a pipeline, an error skips everything up to the Sync; the next
	// Sync starts afresh. Describe, Close and Flush count nothing.
	rc.send(
		&pgproto3.Parse{Name: "one", Query: "SELECT 1"},
		&pgproto3.Describe{ObjectType: 'S', Name: "one"},
		&pgproto3.Bind{PreparedStatement: "one"},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{},
		&pgproto3.Bind{PreparedStatement: "nope"}, // fails: no such statement
		&pgproto3.Execute{},
		&pgproto3.Bind{PreparedStatement: "one"},
		&pgproto3.Execute{},
		&pgproto3.Flush{},
		&pgproto3.Sync{},
		&pgproto3.Bind{PreparedStatement: "one"},
		&pgproto3.Execute{},
		&pgproto3.Close{ObjectType: 'S', Name: "one"},
		&pgproto3.Sync{},
	)
	if got := rc.until('Z'); got != "1tT2TDCEZ" {
		t.Errorf("server said %q", got)
	}
	if got := rc.until('Z'); got != "2DC3Z" {
		t.Errorf("server said %q", got)
	}
	// The empty query, and a statement after the unnamed statement changed.
	rc.send(&pgproto3.Query{String: " -- nothing"})
	rc.until('Z')
	rc.send(
		&pgproto3.Parse{Query: "SELECT 'a'"},
		&pgproto3.Parse{Query: "SELECT 'b', 2"},
		&pgproto3.Bind{},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
	)
	rc.until('Z')

	want := []summary{
		{SQL: "SELECT generate_series(1, $1::int)", Protocol: extended, Tag: "SELECT 1", Rows: 5},
		{SQL: "BEGIN", Protocol: simple, Tag: "BEGIN"},
		{SQL: "SELECT generate_series(1, $1::int)", Protocol: extended, Rows: 3},
		{SQL: "COMMIT", Protocol: simple, Tag: "COMMIT"},
		{SQL: "SELECT 1", Protocol: extended, Tag: "SELECT 1", Rows: 1},
		{SQL: "", Protocol: extended, Err: "26000"},
		{SQL: "SELECT 1", Protocol: extended, Tag: "SELECT 1", Rows: 1},
		{SQL: " -- nothing", Protocol: simple},
		{SQL: "SELECT 'b', 2", Protocol: extended, Tag: "SELECT 1", Rows: 1},
	}
	stmts := tp.statements()
	if diff := cmp.Diff(want, summarize(stmts)); diff != "" {
		t.Errorf("statements (-want +got):\n%s", diff)
	}
	if len(stmts) > 5 && stmts[5].Fingerprint != "(unknown prepared statement nope)" {
		t.Errorf("fingerprint of an unknown statement = %q", stmts[5].Fingerprint)
	}
	if len(stmts) > 7 && stmts[7].Fingerprint != "" {
		t.Errorf("fingerprint of the empty query = %q", stmts[7].Fingerprint)
	}
}

// TestMalformedAndDisconnects: a client that sends garbage, a malformed
// message or hangs up mid-message loses its own connection only.
func TestMalformedAndDisconnects(t *testing.T) {
	tp, url, db := proxied(t)
	c := pgtest.Shared(t)
	ctx := context.Background()
	bystander := connect(t, url, pgx.QueryExecModeCacheStatement)
	check := func(when string) {
		t.Helper()
		var n int
		if err := bystander.QueryRow(ctx, "SELECT 41 + 1").Scan(&n); err != nil || n != 42 {
			t.Fatalf("%s: other connection: %d, %v", when, n, err)
		}
	}
	check("before")

	startup, _ := (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": c.User, "database": db}}).Encode(nil)
	query, _ := (&pgproto3.Query{String: "SELECT 1"}).Encode(nil)
	badLength := func(typ byte, n uint32) []byte {
		b := []byte{typ, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], n)
		return b
	}
	tests := []struct {
		name   string
		send   []byte
		hangUp bool   // close without waiting for the proxy
		reason string // in the proxy's log
	}{
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false, "startup packet: bad length"},
		{"unknown startup code", []byte{0, 0, 0, 8, 0x12, 0x34, 0x56, 0x78}, false, "unknown request code or protocol version 4660.22136"},
		{"startup without parameters", []byte{0, 0, 0, 9, 0, 3, 0, 0, 0}, false, "startup packet: StartupMessage body is invalid"},
		{"message length below 4", append(bytes.Clone(startup), badLength('Q', 2)...), false, "message 'Q': bad length 2"},
		{"oversize message", append(bytes.Clone(startup), badLength('Q', 0x7fffffff)...), false, "message 'Q': bad length 2147483647"},
		{"query not terminated", append(bytes.Clone(startup), 'Q', 0, 0, 0, 7, 'a', 'b', 'c'), false, "Query: text not terminated"},
		{"hang up mid-startup", startup[:5], true, ""},
		{"hang up mid-message", append(bytes.Clone(startup), query[:len(query)-3]...), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", tp.Addr, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(time.Minute))
			if _, err := conn.Write(tt.send); err != nil {
				t.Fatal(err)
			}
			if tt.hangUp {
				conn.Close()
			} else {
				// The proxy closes the connection (after relaying what the
				// server said to the startup, if anything).
				// A reset (unread data) closes as well as an EOF does.
				if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
					t.Fatalf("reading until the proxy closes: %v", err)
				}
				tp.waitLog(t, tt.reason)
			}
			check("after")
		})
	}
}

// TestMalformedServer: a server that sends a malformed message or hangs up
// mid-message (which PostgreSQL never does, hence a scripted one) loses its
// connection, and the client is told by the connection closing.
func TestMalformedServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer []byte
		reason string
	}{
		{"bad length", []byte{'Z', 0, 0, 0, 9, 'I', 'x', 'x', 'x', 'x'}, "ReadyForQuery: bad length 9"},
		{"hang-up mid-message", []byte{'T', 0, 0, 0, 200, 0, 1}, "server disconnected in the middle of a message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				for {
					conn, err := l.Accept()
					if err != nil {
						return
					}
					go func() {
						defer conn.Close()
						be := pgproto3.NewBackend(conn, conn)
						if _, err := be.ReceiveStartupMessage(); err != nil {
							return
						}
						be.Send(&pgproto3.AuthenticationOk{})
						be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
						be.Flush()
						if _, err := be.Receive(); err != nil {
							return
						}
						conn.Write(tc.answer)
					}()
				}
			}()
			tp := startProxy(t, l.Addr().String())
			conn, err := pgx.Connect(context.Background(), "postgres://u@"+tp.Addr+"/d?sslmode=disable")
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(context.Background(), "SELECT 1"); err == nil {
				t.Fatal("query over a broken server connection succeeded")
			}
			tp.waitLog(t, tc.reason)
		})
	}
}

func TestUnreachableUpstream(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	tp := startProxy(t, addr)
	_, err = pgx.Connect(context.Background(), "postgres://u@"+tp.Addr+"/d?sslmode=disable")
	if err == nil || !strings.Contains(err.Error(), "sqlcount: cannot reach upstream server") {
		t.Fatalf("connect = %v, want the proxy's error", err)
	}
}

func TestNew(t *testing.T) {
	for _, up := range []string{"", "localhost", "a:b:c"} {
		if _, err := New(Config{Upstream: up}); err == nil {
			t.Errorf("New(Upstream %q) succeeded", up)
		}
	}
}

// TestServerDisconnect: when the server ends a connection (here an
// administrator terminates its backend), that connection ends and the
// others go on.
func TestServerDisconnect(t *testing.T) {
	tp, url, db := proxied(t)
	ctx := context.Background()
	victim := connect(t, url, pgx.QueryExecModeCacheStatement)
	bystander := connect(t, url, pgx.QueryExecModeCacheStatement)
	admin := connect(t, pgtest.Shared(t).URL(db), pgx.QueryExecModeCacheStatement)
	pid := victim.PgConn().PID()
	var ok bool
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend: %v, %v", ok, err)
	}
	if _, err := victim.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("query on a terminated connection succeeded")
	}
	if _, err := bystander.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("other connection: %v", err)
	}
	if fresh := connect(t, url, pgx.QueryExecModeCacheStatement); fresh.Ping(ctx) != nil {
		t.Fatal("new connection failed")
	}
	_ = tp
}
