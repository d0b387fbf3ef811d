package grpcwire

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/replaykit/replay/snapshots"
)

func TestFrames(t *testing.T) {
	var b []byte
	b = AppendFrame(b, []byte("abc"), false)
	b = AppendFrame(b, nil, false)
	b = AppendFrame(b, []byte{0xff}, true)
	r := bytes.NewReader(b)
	var got []Frame
	for {
		f, err := ReadFrame(r, 0)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f)
	}
	want := []Frame{{Data: []byte("abc")}, {Data: []byte{}}, {Compressed: true, Data: []byte{0xff}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ReadFrame(bytes.NewReader(b[:6]), 0); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(AppendFrame(nil, make([]byte, 10), false)), 9); !errors.Is(err, ErrTooLarge) {
		t.Errorf("limit: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{2, 0, 0, 0, 0}), 0); !errors.Is(err, ErrBadFlag) {
		t.Errorf("flag: %v", err)
	}
}

// TestSplitter feeds a stream one byte at a time and all at once: the same
// messages, kept to Keep bytes with their full sizes.
func TestSplitter(t *testing.T) {
	var b []byte
	b = AppendFrame(b, []byte("hello world"), false)
	b = AppendFrame(b, nil, false)
	b = AppendFrame(b, []byte("xy"), true)
	want := []Piece{{Data: []byte("hello"), Size: 11}, {Size: 0}, {Compressed: true, Data: []byte("xy"), Size: 2}}
	for _, step := range []int{1, 3, len(b)} {
		s := &Splitter{Keep: 5}
		for i := 0; i < len(b); i += step {
			s.Write(b[i:min(i+step, len(b))])
		}
		var got []Piece
		for p, ok := s.Next(); ok; p, ok = s.Next() {
			got = append(got, p)
		}
		if diff := cmp.Diff(want, got); diff != "" || s.Pending() || s.Err() != nil {
			t.Errorf("step %d (-want +got):\n%s pending %v err %v", step, diff, s.Pending(), s.Err())
		}
	}
	s := &Splitter{}
	s.Write(b[:7])
	if !s.Pending() {
		t.Error("a cut message is not pending")
	}
	bad := &Splitter{}
	bad.Write([]byte{2, 0, 0, 0, 0})
	if bad.Err() == nil {
		t.Error("a bad flag is no error")
	}
}

// TestStream: gzip messages come out decoded with their decoded sizes and
// times; unknown encodings are kept as sent; the budget and Keep cut.
func TestStream(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	gz, err := Compress("gzip", bytes.Repeat([]byte("a"), 100))
	if err != nil {
		t.Fatal(err)
	}
	s := &Stream{From: snapshots.FromServer, Start: start, Encoding: "gzip", Keep: 10, Now: func() time.Time { return now }}
	now = start.Add(time.Millisecond)
	s.Write(AppendFrame(nil, []byte("plain"), false))
	now = start.Add(2 * time.Millisecond)
	whole := AppendFrame(nil, gz, true)
	s.Write(whole[:4])
	s.Write(whole[4:])
	want := []snapshots.Message{
		{From: snapshots.FromServer, Offset: time.Millisecond, Data: []byte("plain"), Size: 5},
		{From: snapshots.FromServer, Offset: 2 * time.Millisecond, Data: []byte("aaaaaaaaaa"), Size: 100, Compressed: true},
	}
	if diff := cmp.Diff(want, s.Messages()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if s.Close() != nil || s.WireBytes() != int64(len(whole)+10) {
		t.Errorf("close %v, wire %d", s.Close(), s.WireBytes())
	}
	u := &Stream{From: snapshots.FromClient, Encoding: "snappy", Budget: 3}
	u.Write(AppendFrame(nil, []byte("xyzw"), true))
	u.Write(AppendFrame(nil, []byte("q"), false))
	want = []snapshots.Message{{From: snapshots.FromClient, Data: []byte("xyz"), Size: 4, Compressed: true, Encoding: "snappy"},
		{From: snapshots.FromClient, Size: 1}}
	if diff := cmp.Diff(want, u.Messages()); diff != "" {
		t.Errorf("unknown encoding (-want +got):\n%s", diff)
	}
	c := &Stream{}
	c.Write([]byte{0, 0, 0, 0, 9, 'a'})
	if c.Close() == nil {
		t.Error("a stream ending inside a message closed cleanly")
	}
}

func TestCompress(t *testing.T) {
	for _, enc := range []string{"", "identity", "gzip", "deflate"} {
		in := []byte("the same message, again and again and again")
		c, err := Compress(enc, in)
		if err != nil {
			t.Fatal(err)
		}
		out, size, err := Decompress(enc, c, 0)
		if err != nil || !bytes.Equal(out, in) || size != int64(len(in)) {
			t.Errorf("%s: %q %d %v", enc, out, size, err)
		}
		if out, size, _ := Decompress(enc, c, 3); string(out) != "the" || size != int64(len(in)) {
			t.Errorf("%s keep 3: %q %d", enc, out, size)
		}
	}
	if _, _, err := Decompress("zstd", nil, 0); !errors.Is(err, ErrUnknownEncoding) {
		t.Errorf("zstd: %v", err)
	}
	gz, _ := Compress("gzip", bytes.Repeat([]byte("b"), 5000))
	if _, _, err := Decompress("gzip", gz[:len(gz)/2], 0); err == nil {
		t.Error("half a gzip stream decoded cleanly")
	}
}

func TestStatus(t *testing.T) {
	s := Status{Code: 5, Message: "no route à 100%\n", Details: []byte{1, 2, 3}}
	tr := s.Trailer()
	if got := tr.Get("Grpc-Message"); got != "no route %C3%A0 100%25%0A" {
		t.Errorf("encoded %q", got)
	}
	got, ok, err := ParseStatus(http.Header{"Grpc-Status": {"0"}}, tr)
	if !ok || err != nil || cmp.Diff(s, got) != "" {
		t.Errorf("%v %v %s", ok, err, cmp.Diff(s, got))
	}
	if got, ok, _ := ParseStatus(http.Header{"Grpc-Status": {"14"}}, nil); !ok || got.Code != 14 || got.String() != "UNAVAILABLE" {
		t.Errorf("trailers-only: %v %v", got, ok)
	}
	if _, ok, _ := ParseStatus(nil, nil); ok {
		t.Error("a status from nothing")
	}
	if _, _, err := ParseStatus(nil, http.Header{"Grpc-Status": {"ok"}}); err == nil {
		t.Error("grpc-status ok parsed")
	}
	if DecodeMessage("50%") != "50%" || DecodeMessage("%zz") != "%zz" || CodeName(99) != "CODE(99)" {
		t.Error("lenient decoding or names")
	}
}

func TestTimeout(t *testing.T) {
	for _, c := range []struct {
		s string
		d time.Duration
	}{{"100m", 100 * time.Millisecond}, {"5S", 5 * time.Second}, {"1H", time.Hour}, {"2M", 2 * time.Minute},
		{"7u", 7 * time.Microsecond}, {"99999999n", 99999999}} {
		d, err := ParseTimeout(c.s)
		if err != nil || d != c.d {
			t.Errorf("parse %q: %v %v", c.s, d, err)
		}
		if got := FormatTimeout(c.d); got != c.s {
			t.Errorf("format %v: %q, want %q", c.d, got, c.s)
		}
	}
	if got := FormatTimeout(1500 * time.Millisecond); got != "1500m" {
		t.Errorf("1.5s: %q", got)
	}
	if got := FormatTimeout(100*time.Second + 1); got != "100000001u" && got != "100000002u" {
		d, _ := ParseTimeout(got)
		if d < 100*time.Second+1 {
			t.Errorf("100s+1ns: %q shortens the deadline", got)
		}
	}
	for _, bad := range []string{"", "5", "5x", "123456789S", "-1S", "1.5S"} {
		if _, err := ParseTimeout(bad); !errors.Is(err, ErrBadTimeout) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
