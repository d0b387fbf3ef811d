package grpcwire

import (
	"bytes"
	"net/http"
	"testing"
	"time"
)

// FuzzSplitter: any bytes, in any cuts, give the messages ReadFrame reads
// from them whole.
func FuzzSplitter(f *testing.F) {
	f.Add(AppendFrame(AppendFrame(nil, []byte("abc"), false), []byte{1}, true), 2)
	f.Add([]byte{0, 0, 0, 0, 0}, 1)
	f.Fuzz(func(t *testing.T, b []byte, step int) {
		step = max(1, step%64)
		s := &Splitter{}
		for i := 0; i < len(b); i += step {
			s.Write(b[i:min(i+step, len(b))])
		}
		r := bytes.NewReader(b)
		for p, ok := s.Next(); ok; p, ok = s.Next() {
			f, err := ReadFrame(r, 0)
			if err != nil {
				t.Fatalf("the splitter cut a message ReadFrame does not read: %v", err)
			}
			if f.Compressed != p.Compressed || !bytes.Equal(f.Data, p.Data) || int64(len(f.Data)) != p.Size {
				t.Fatalf("splitter %+v, ReadFrame %+v", p, f)
			}
		}
	})
}

// FuzzReadFrame: no input panics, a frame read writes back the same bytes.
func FuzzReadFrame(f *testing.F) {
	f.Add(AppendFrame(nil, []byte("x"), true))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ReadFrame(bytes.NewReader(b), 1<<20)
		if err != nil {
			return
		}
		if again := AppendFrame(nil, fr.Data, fr.Compressed); !bytes.Equal(again, b[:len(again)]) {
			t.Fatalf("rewritten %x, read from %x", again, b)
		}
	})
}

// FuzzTimeout: a timeout that parses formats to one no shorter.
func FuzzTimeout(f *testing.F) {
	for _, s := range []string{"100m", "5S", "1H", "99999999n", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTimeout(s)
		if err != nil {
			return
		}
		back, err := ParseTimeout(FormatTimeout(d))
		if err != nil || back < d && d < 99999999*time.Minute {
			t.Fatalf("%q = %v, formatted %q = %v %v", s, d, FormatTimeout(d), back, err)
		}
	})
}

// FuzzStatus: a message survives encoding; a parsed status writes back
// the same code and message.
func FuzzStatus(f *testing.F) {
	f.Add("5", "no%20route", "")
	f.Add("0", "%", "AAEC")
	f.Fuzz(func(t *testing.T, code, msg, details string) {
		if DecodeMessage(EncodeMessage(msg)) != msg {
			t.Fatalf("message %q does not survive", msg)
		}
		h := http.Header{"Grpc-Status": {code}, "Grpc-Message": {msg}, "Grpc-Status-Details-Bin": {details}}
		s, ok, err := ParseStatus(nil, h)
		if !ok || err != nil {
			return
		}
		again, _, err := ParseStatus(nil, s.Trailer())
		if err != nil || again.Code != s.Code || again.Message != s.Message || !bytes.Equal(again.Details, s.Details) {
			t.Fatalf("%+v rewritten as %+v (%v)", s, again, err)
		}
	})
}
