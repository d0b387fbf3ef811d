package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// fuzzSession is a session of a proxy that is never served, to feed streams
// to directly.
func fuzzSession(deprecateEOF bool) (*session, *sqlcore.Proxy, *int64) {
	var seen int64
	p := sqlcore.NewUnchecked(Config{Upstream: "127.0.0.1:1", OnStatement: func(*snapshots.Statement) { seen++ }}, New())
	var caps uint32
	if deprecateEOF {
		caps = 1 << 24
	}
	return newSession(p.Recorder(1), caps, 0), p, &seen
}

// pkt frames a payload as a packet of sequence seq.
func pkt(seq byte, payload ...byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

func cmd(c byte, arg string) []byte { return pkt(0, append([]byte{c}, arg...)...) }

func stmtCmd(c byte, id uint32, extra ...byte) []byte {
	b := []byte{c, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], id)
	return pkt(0, append(b, extra...)...)
}

var (
	okPacket   = []byte{0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00}
	okMore     = []byte{0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00} // MORE_RESULTS_EXISTS
	eofPacket  = []byte{0xfe, 0x00, 0x00, 0x02, 0x00}
	eofOK      = []byte{0xfe, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00}
	errPkt     = append([]byte{0xff, 0x7a, 0x04, '#', '4', '2', 'S', '0', '2'}, "Table 't' doesn't exist"...)
	colDef     = append([]byte{3, 'd', 'e', 'f', 0, 0, 0, 1, 'c', 1, 'c', 0x0c}, make([]byte, 12)...)
	textRow    = []byte{1, '7'}
	prepOK     = []byte{0x00, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}
	binaryRow  = []byte{0x00, 0x00, 7, 0, 0, 0, 0, 0, 0, 0}
	fuzzChunks = []byte{0, 3, 7, 1, 200}
)

// resultSet is a one-column result set of rows rows, ended as the
// capabilities say.
func resultSet(deprecateEOF bool, rows int, row []byte) []byte {
	var b []byte
	seq := byte(1)
	add := func(p []byte) { b = append(b, pkt(seq, p...)...); seq++ }
	add([]byte{1})
	add(colDef)
	if !deprecateEOF {
		add(eofPacket)
	}
	for range rows {
		add(row)
	}
	if deprecateEOF {
		add(eofOK)
	} else {
		add(eofPacket)
	}
	return b
}

// chunks feeds b to feed in pieces whose sizes cycle through sizes.
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

// checkTotals checks that the counts agree with each other and with what
// was reported.
func checkTotals(t *testing.T, p *sqlcore.Proxy, seen int64) {
	st := p.Stats()
	var sum, errs int64
	for _, f := range st.Fingerprints {
		sum += f.Count
		errs += f.Errors
		if f.Count < 0 || f.Errors < 0 || f.Total < 0 {
			t.Fatalf("fingerprint %q: count %d, errors %d, total %v", f.Fingerprint, f.Count, f.Errors, f.Total)
		}
	}
	if sum != st.Statements || errs != st.Errors || st.Statements+st.Errors != seen {
		t.Fatalf("statements %d, errors %d; fingerprints sum %d and %d; %d reported", st.Statements, st.Errors, sum, errs, seen)
	}
}

// FuzzClientStream feeds a client's command stream, in chunks, to the
// client side of a session: no panic, every error a malformed stream.
func FuzzClientStream(f *testing.F) {
	f.Add(bytes.Join([][]byte{cmd(3, "SELECT 1; SELECT 'a;b' -- c\n"), cmd(0x16, "SELECT * FROM t WHERE id = ?"),
		stmtCmd(0x17, 1, 0, 1, 0, 0, 0), stmtCmd(0x19, 1), cmd(2, "db"), cmd(0x0e, "")}, nil), fuzzChunks)
	f.Add(append(cmd(3, "LOAD DATA LOCAL INFILE 'x' INTO TABLE t"), pkt(2, []byte("1,2\n")...)...), []byte{})
	f.Fuzz(func(t *testing.T, stream, sizes []byte) {
		s, p, seen := fuzzSession(len(sizes)%2 == 0)
		err := chunks(stream, sizes, s.Client)
		if err != nil && !sqlcore.IsMalformed(err) {
			t.Fatalf("error %v is not a malformed stream", err)
		}
		checkTotals(t, p, *seen)
	})
}

// seedStreams is a client's commands and the server's answers, framed as
// the capabilities say: a select of 3 rows, a query string of two
// statements, a prepare, its execute (2 binary rows), a failing select.
func seedStreams(deprecateEOF bool) (client, server []byte) {
	d := deprecateEOF
	client = bytes.Join([][]byte{cmd(3, "SELECT c FROM t"), cmd(3, "INSERT INTO t VALUES (1); SELECT 2"), cmd(0x16, "SELECT c FROM t WHERE id = ?"),
		stmtCmd(0x17, 1, 0, 1, 0, 0, 0), cmd(3, "SELECT * FROM missing")}, nil)
	prep := [][]byte{pkt(1, prepOK...), pkt(2, colDef...), pkt(3, colDef...)}
	if !d {
		prep = [][]byte{pkt(1, prepOK...), pkt(2, colDef...), pkt(3, eofPacket...), pkt(4, colDef...), pkt(5, eofPacket...)}
	}
	server = bytes.Join([][]byte{resultSet(d, 3, textRow), pkt(1, okMore...), resultSet(d, 1, textRow),
		bytes.Join(prep, nil), resultSet(d, 2, binaryRow), pkt(1, errPkt...)}, nil)
	return client, server
}

// TestSeedStreams: the seed streams, fed whole and in small chunks, with
// CLIENT_DEPRECATE_EOF and without, count what they hold.
func TestSeedStreams(t *testing.T) {
	for _, d := range []bool{false, true} {
		for _, sizes := range [][]byte{nil, {0, 2, 5}} {
			client, server := seedStreams(d)
			s, p, _ := fuzzSession(d)
			if err := chunks(client, sizes, s.Client); err != nil {
				t.Fatal(err)
			}
			if err := chunks(server, sizes, s.Server); err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, f := range p.Stats().Fingerprints {
				got[f.Fingerprint] = f.Count*10 + f.Errors
			}
			want := map[string]int64{"SELECT c FROM t": 10, "INSERT INTO t VALUES (?)": 10, "SELECT ?": 10, "SELECT c FROM t WHERE id = ?": 10, "SELECT * FROM missing": 1}
			if diff := cmp.Diff(want, got); diff != "" || s.q.size != 0 {
				t.Errorf("deprecateEOF %v, chunks %v: counts ×10 + errors (-want +got):\n%s; %d commands left", d, sizes, diff, s.q.size)
			}
		}
	}
}

// FuzzServerStream feeds a client stream and a server stream, interleaved,
// to the two sides of a session: no panic, the FIFO pairing commands with
// answers holds up and the counts agree.
func FuzzServerStream(f *testing.F) {
	for _, d := range []bool{false, true} {
		client, server := seedStreams(d)
		f.Add(client, server, fuzzChunks, d)
	}
	f.Fuzz(func(t *testing.T, client, server, sizes []byte, deprecateEOF bool) {
		s, p, seen := fuzzSession(deprecateEOF)
		// The client's commands first, then the answers: as a pipeline.
		if err := chunks(client, sizes, s.Client); err != nil && !sqlcore.IsMalformed(err) {
			t.Fatalf("client: %v is not a malformed stream", err)
		}
		if err := chunks(server, sizes, s.Server); err != nil && !sqlcore.IsMalformed(err) {
			t.Fatalf("server: %v is not a malformed stream", err)
		}
		checkTotals(t, p, *seen)
		if s.q.size < 0 {
			t.Fatalf("FIFO size %d", s.q.size)
		}
	})
}

// FuzzHandshake parses text as a server's greeting and a client's response
// and rewrites both: no panic, and a rewrite keeps the length and offers no
// compression.
func FuzzHandshake(f *testing.F) {
	f.Add(mariadbGreeting, []byte(nil))
	f.Add([]byte{10, 'x', 0}, append(make([]byte, 32), "root\x00"...))
	// Cut length-encoded integers (go-mysql's reader indexed past them): the
	// auth data's length, and the connection attributes' total.
	f.Add([]byte(nil), append([]byte{0x00, 0x02, 0x20, 0x00}, append(make([]byte, 28), "\x00\xfc"...)...))
	f.Add([]byte(nil), append([]byte{0x00, 0x02, 0x10, 0x00}, append(make([]byte, 28), "u\x00\x00\xfe\x01"...)...))
	f.Fuzz(func(t *testing.T, greet, resp []byte) {
		if g, err := parseGreeting(greet); err == nil {
			out := g.offer(len(resp)%2 == 0)
			if len(out) != len(greet) {
				t.Fatalf("greeting rewritten to %d bytes from %d", len(out), len(greet))
			}
			if g2, err := parseGreeting(out); err != nil || g2.caps&(1<<5) != 0 {
				t.Fatalf("rewritten greeting: %v, caps %#x", err, g2.caps)
			}
		}
		if r, err := parseResponse(resp); err == nil {
			if out := r.forServer(true); len(out) != len(resp) {
				t.Fatalf("response rewritten to %d bytes from %d", len(out), len(resp))
			}
		}
	})
}

// mariadbGreeting is MariaDB 10.11's greeting, as captured.
var mariadbGreeting = []byte("\x0a5.5.5-10.11.19-MariaDB-0+deb12u1-log\x00\x03\x00\x00\x00" +
	"abcdefgh\x00\xfe\xf7\x2d\x02\x00\xff\x81\x15\x00\x00\x00\x00\x00\x00\x1d\x00\x00\x00" +
	"ijklmnopqrst\x00mysql_native_password\x00")

// FuzzFingerprint fingerprints text as SQL: no panic, the statements found
// lie within the text in order, and a fingerprint is its own fingerprint
// when go-sqllexer keeps its own layout.
func FuzzFingerprint(f *testing.F) {
	for _, q := range []string{"SELECT c FROM sbtest1 WHERE id=42", "UPDATE t SET k=k+1 WHERE id=-5; SELECT 'a;b'",
		"select `a`.`b` from t where x in (1,2,-3) and y='it''s\\'' # c", "CREATE PROCEDURE p() BEGIN SELECT 1; END", "/* x */ -- y\n"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		var s scanner
		s.scan([]byte(q), true)
		end := 0
		for _, sp := range s.spans {
			if sp.start < end || sp.end < sp.start || sp.end > len(q) || sp.shapeEnd < sp.shapeStart || sp.shapeEnd > len(s.shape) {
				t.Fatalf("span %+v out of order or bounds (text %d, shape %d)", sp, len(q), len(s.shape))
			}
			end = sp.end
		}
		fp := Fingerprint(q)
		if strings.ContainsRune(q, 0) {
			return
		}
		_ = Fingerprint(fp)
	})
}

// TestLencInt reads length-encoded integers of every width, whole and cut.
func TestLencInt(t *testing.T) {
	for _, c := range []struct {
		in []byte
		v  uint64
		n  int
	}{
		{nil, 0, 0}, {[]byte{7}, 7, 1}, {[]byte{0xfb}, 0, 1},
		{[]byte{0xfc, 1, 2}, 0x0201, 3}, {[]byte{0xfc, 1}, 0, 0},
		{[]byte{0xfd, 1, 2, 3}, 0x030201, 4}, {[]byte{0xfd, 1, 2}, 0, 0},
		{[]byte{0xfe, 1, 2, 3, 4, 5, 6, 7, 8}, 0x0807060504030201, 9}, {[]byte{0xfe, 1}, 0, 0},
	} {
		if v, n := lencInt(c.in); v != c.v || n != c.n {
			t.Errorf("lencInt(%x) = %#x, %d; want %#x, %d", c.in, v, n, c.v, c.n)
		}
	}
	if s, n := lencString([]byte{3, 'a', 'b'}); s != nil || n != 0 {
		t.Errorf("cut string read as %q, %d", s, n)
	}
	if s, n := lencString([]byte{2, 'a', 'b', 'c'}); string(s) != "ab" || n != 3 {
		t.Errorf("lencString = %q, %d", s, n)
	}
}
