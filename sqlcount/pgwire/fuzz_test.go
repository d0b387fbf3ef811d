package pgwire

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/replaykit/replay/snapshots"
)

var update = flag.Bool("update", false, "rewrite the fuzz seed corpora in testdata/fuzz")

// fuzzSession is a session of a proxy that is never served, to feed
// streams to directly.
func fuzzSession() (*session, *int64) {
	var seen int64
	p := newProxy(Config{Upstream: "127.0.0.1:1", OnStatement: func(*snapshots.Statement) { seen++ }})
	return sessionOf(p), &seen
}

// chunks feeds b to feed in pieces whose sizes cycle through sizes, as reads
// from a socket would return them.
func chunks(b []byte, sizes []byte, feed func([]byte, time.Time) error) error {
	now := time.Unix(1700000000, 0)
	for i := 0; len(b) > 0; i++ {
		n := len(b)
		if len(sizes) > 0 {
			n = min(n, int(sizes[i%len(sizes)])+1)
		}
		now = now.Add(time.Microsecond)
		if err := feed(b[:n], now); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// checkTotals checks that the counts agree with each other.
func checkTotals(t *testing.T, s *session, seen int64) {
	st := statsOf(s)
	var sum, errs int64
	for _, f := range st.Fingerprints {
		sum += f.Count
		errs += f.Errors
		if f.Count < 0 || f.Errors < 0 || f.Count+f.Errors == 0 || f.Total < 0 {
			t.Fatalf("fingerprint %q: count %d, errors %d, total %v", f.Fingerprint, f.Count, f.Errors, f.Total)
		}
	}
	if sum != st.Statements || errs != st.Errors || seen != st.Statements+st.Errors {
		t.Fatalf("statements %d and errors %d, per fingerprint %d and %d, reported %d", st.Statements, st.Errors, sum, errs, seen)
	}
	if s.q.size < 0 || s.q.size > len(s.q.buf) {
		t.Fatalf("queue size %d of %d", s.q.size, len(s.q.buf))
	}
}

// FuzzClientStream feeds a client's byte stream (startup included) to the
// proxy's decoder: whatever it is, it must not panic, and the decoder either
// accepts it or reports it malformed.
func FuzzClientStream(f *testing.F) {
	for _, seed := range clientSeeds() {
		f.Add(seed, []byte{3, 200, 17})
	}
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		s, seen := fuzzSession()
		r := bytes.NewReader(data)
		if _, cancel, _, err := readStartup(struct {
			io.Reader
			io.Writer
		}{r, io.Discard}, false); err != nil || cancel {
			return
		}
		rest, _ := io.ReadAll(r)
		chunks(rest, sizes, s.client.feed)
		checkTotals(t, s, *seen)
	})
}

// FuzzServerStream feeds a client stream and a server stream, interleaved,
// to the two sides of a session: the FIFO between them must hold up.
func FuzzServerStream(f *testing.F) {
	for _, seed := range serverSeeds() {
		f.Add(seed[0], seed[1], []byte{5, 60, 255})
	}
	f.Fuzz(func(t *testing.T, client, server, sizes []byte) {
		s, seen := fuzzSession()
		now := time.Unix(1700000000, 0)
		ci, si := 0, 0
		for step := 0; ci < len(client) || si < len(server); step++ {
			n := 64
			if len(sizes) > 0 {
				n = int(sizes[step%len(sizes)]) + 1
			}
			now = now.Add(time.Millisecond)
			if ci < len(client) {
				k := min(n, len(client)-ci)
				if s.client.feed(client[ci:ci+k], now) != nil {
					ci = len(client)
				}
				ci += k
			}
			if si < len(server) {
				k := min(n, len(server)-si)
				if s.server.feed(server[si:si+k], now) != nil {
					si = len(server)
				}
				si += k
			}
		}
		checkTotals(t, s, *seen)
	})
}

func encode(msgs ...pgproto3.Message) []byte {
	var b []byte
	for _, m := range msgs {
		var err error
		b, err = m.Encode(b)
		if err != nil {
			panic(err)
		}
	}
	return b
}

func clientSeeds() [][]byte {
	startup := encode(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "u", "database": "d"}})
	ssl := encode(&pgproto3.SSLRequest{})
	cancel := encode(&pgproto3.CancelRequest{ProcessID: 1, SecretKey: []byte{1, 2, 3, 4}})
	simple := encode(&pgproto3.Query{String: "SELECT 1; SELECT 'a;b' /*traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'*/"}, &pgproto3.Terminate{})
	ext := encode(
		&pgproto3.Parse{Name: "s", Query: "SELECT $1::int"}, &pgproto3.Describe{ObjectType: 'S', Name: "s"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", Parameters: [][]byte{[]byte("1")}},
		&pgproto3.Execute{Portal: "p", MaxRows: 1}, &pgproto3.Close{ObjectType: 'P', Name: "p"}, &pgproto3.Sync{},
		&pgproto3.Parse{Query: "INSERT INTO t VALUES ($1)"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Flush{}, &pgproto3.Sync{},
	)
	copyIn := encode(&pgproto3.Query{String: "COPY t FROM STDIN"}, &pgproto3.CopyData{Data: []byte("1\n")}, &pgproto3.CopyDone{})
	return [][]byte{
		append(bytes.Clone(startup), simple...),
		append(append(bytes.Clone(ssl), startup...), ext...),
		append(bytes.Clone(startup), copyIn...),
		cancel,
		[]byte("GET / HTTP/1.1\r\n\r\n"),
	}
}

func serverSeeds() [][2][]byte {
	// The server's answers to the client's messages (a startup's answers
	// would come before the client's first message).
	row := &pgproto3.DataRow{Values: [][]byte{[]byte("1")}}
	return [][2][]byte{
		{
			encode(&pgproto3.Query{String: "SELECT 1; SELECT 2"}),
			encode(&pgproto3.RowDescription{}, row, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")},
				&pgproto3.RowDescription{}, row, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}, &pgproto3.ReadyForQuery{TxStatus: 'I'}),
		},
		{
			encode(&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Parse{Query: "SELECT 1/0"}, &pgproto3.Bind{},
				&pgproto3.Execute{}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}),
			encode(&pgproto3.ParseComplete{}, &pgproto3.BindComplete{}, row, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")},
				&pgproto3.ParseComplete{}, &pgproto3.BindComplete{}, &pgproto3.ErrorResponse{Severity: "ERROR", Code: "22012", Message: "division by zero"},
				&pgproto3.ReadyForQuery{TxStatus: 'I'}),
		},
		{
			encode(&pgproto3.Parse{Name: "s", Query: "SELECT generate_series(1,5)"}, &pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s"},
				&pgproto3.Execute{Portal: "p", MaxRows: 2}, &pgproto3.Execute{Portal: "p"}, &pgproto3.Sync{}),
			encode(&pgproto3.ParseComplete{}, &pgproto3.BindComplete{}, row, row, &pgproto3.PortalSuspended{}, row, row, row,
				&pgproto3.CommandComplete{CommandTag: []byte("SELECT 3")}, &pgproto3.ReadyForQuery{TxStatus: 'I'}),
		},
		{
			encode(&pgproto3.Query{String: "COPY t FROM STDIN"}, &pgproto3.CopyData{Data: []byte("1\n")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: ""}),
			encode(&pgproto3.CopyInResponse{}, &pgproto3.CommandComplete{CommandTag: []byte("COPY 1")}, &pgproto3.ReadyForQuery{TxStatus: 'I'},
				&pgproto3.EmptyQueryResponse{}, &pgproto3.ReadyForQuery{TxStatus: 'I'}),
		},
	}
}

// TestFuzzCorpus checks the stored seed corpora exist (go test -update
// writes them from the seeds above) and runs the seeds as plain tests.
func TestFuzzCorpus(t *testing.T) {
	write := func(fuzz string, i int, values ...[]byte) {
		var b bytes.Buffer
		b.WriteString("go test fuzz v1\n")
		for _, v := range values {
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		}
		dir := filepath.Join("testdata", "fuzz", fuzz)
		path := filepath.Join(dir, fmt.Sprintf("seed-%d", i))
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("seed corpus missing (run go test -update): %v", err)
		}
	}
	for i, seed := range clientSeeds() {
		write("FuzzClientStream", i, seed, []byte{3, 200, 17})
	}
	for i, seed := range serverSeeds() {
		write("FuzzServerStream", i, seed[0], seed[1], []byte{5, 60, 255})
	}

	// The server seeds count what a real server's answers mean.
	want := []int64{2, 2, 1, 2}
	for i, seed := range serverSeeds() {
		s, seen := fuzzSession()
		if err := chunks(seed[0], []byte{6}, s.client.feed); err != nil {
			t.Fatal(err)
		}
		if err := chunks(seed[1], []byte{9}, s.server.feed); err != nil {
			t.Fatal(err)
		}
		checkTotals(t, s, *seen)
		if st := statsOf(s); st.Statements+st.Errors != want[i] { // completed or rejected
			got := st.Statements + st.Errors
			t.Errorf("server seed %d: %d statements, want %d", i, got, want[i])
		}
		if s.q.size != 0 {
			t.Errorf("server seed %d: %d messages still pending", i, s.q.size)
		}
	}
}

// FuzzFingerprint lexes and fingerprints arbitrary text: no panic, the
// statements found lie within the text, in order, and a fingerprint is its
// own fingerprint.
func FuzzFingerprint(f *testing.F) {
	for _, s := range []string{"SELECT 1; SELECT 'a;b'", "SELECT $$x$$ -- c\n; /* a /* b */ */", "E'\\''", "x IN (1,-2,$3)", "BEGIN ATOMIC END; CASE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		var s scanner
		s.scan([]byte(sql), true)
		last := 0
		for _, sp := range s.spans {
			if sp.start < last || sp.end < sp.start || sp.end > len(sql) || sp.shapeStart > sp.shapeEnd || sp.shapeEnd > len(s.shape) {
				t.Fatalf("bad span %+v of %q", sp, sql)
			}
			last = sp.end
		}
		fp := Fingerprint(sql)
		if again := Fingerprint(fp); again != fp && utf8.ValidString(sql) {
			t.Fatalf("Fingerprint(%q) = %q, its fingerprint %q", sql, fp, again)
		}
	})
}
