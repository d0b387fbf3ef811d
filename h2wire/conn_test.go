package h2wire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// events records what a Conn reports.
type events struct{ got []string }

func (e *events) Headers(id uint32, client bool, fields []hpack.HeaderField, end bool, t time.Time) {
	var kv []string
	for _, f := range fields {
		kv = append(kv, f.Name+"="+f.Value)
	}
	e.got = append(e.got, fmt.Sprintf("H %d %v %s end=%v", id, client, strings.Join(kv, ","), end))
}

func (e *events) Data(id uint32, client bool, data []byte, end bool, t time.Time) {
	e.got = append(e.got, fmt.Sprintf("D %d %v %q end=%v", id, client, data, end))
}

func (e *events) Reset(id uint32, client bool, code http2.ErrCode, t time.Time) {
	e.got = append(e.got, fmt.Sprintf("R %d %v %v", id, client, code))
}

// conversation writes a client's and a server's frames with x/net/http2's
// own Framer and HPACK encoder.
func conversation(t testing.TB) (client, server []byte) {
	var cb, sb bytes.Buffer
	cb.WriteString(Preface)
	cf, sf := http2.NewFramer(&cb, nil), http2.NewFramer(&sb, nil)
	block := func(fields ...string) []byte {
		var b bytes.Buffer
		enc := hpack.NewEncoder(&b)
		for i := 0; i < len(fields); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return b.Bytes()
	}
	cf.WriteSettings()
	sf.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
	req := block(":method", "POST", ":path", "/route.RoutesService/FindRoute", ":authority", "routes:50051", ":scheme", "http", "content-type", "application/grpc")
	// A header block split over HEADERS and CONTINUATION.
	cf.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: req[:5]})
	cf.WriteContinuation(1, true, req[5:])
	cf.WriteData(1, true, []byte("\x00\x00\x00\x00\x02\x0a\x00"))
	sf.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "200", "content-type", "application/grpc"), EndHeaders: true})
	sf.WriteDataPadded(1, false, []byte("\x00\x00\x00\x00\x00"), []byte{0, 0, 0})
	sf.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("grpc-status", "0"), EndHeaders: true, EndStream: true})
	cf.WriteRSTStream(3, http2.ErrCodeCancel)
	return cb.Bytes(), sb.Bytes()
}

// TestConn feeds a conversation in pieces of every size: the same events.
func TestConn(t *testing.T) {
	client, server := conversation(t)
	want := []string{
		`H 1 true :method=POST,:path=/route.RoutesService/FindRoute,:authority=routes:50051,:scheme=http,content-type=application/grpc end=false`,
		`D 1 true "\x00\x00\x00\x00\x02\n\x00" end=true`,
		`R 3 true CANCEL`,
		`H 1 false :status=200,content-type=application/grpc end=false`,
		`D 1 false "\x00\x00\x00\x00\x00" end=false`,
		`H 1 false grpc-status=0 end=true`,
	}
	for _, step := range []int{1, 7, 100, 1 << 20} {
		ev := &events{}
		c := NewConn(ev)
		for _, side := range []struct {
			b      []byte
			client bool
		}{{client, true}, {server, false}} {
			for i := 0; i < len(side.b); i += step {
				c.Feed(side.client, side.b[i:min(i+step, len(side.b))], time.Time{})
			}
		}
		if c.Broken() != nil || strings.Join(ev.got, "\n") != strings.Join(want, "\n") {
			t.Errorf("step %d: broken %v\n%s", step, c.Broken(), strings.Join(ev.got, "\n"))
		}
	}
	c := NewConn(&events{})
	c.Feed(true, []byte("GET / HTTP/1.1\r\n"), time.Time{})
	if c.Broken() == nil {
		t.Error("HTTP/1 taken for HTTP/2")
	}
	c = NewConn(&events{})
	c.Gap(false)
	if c.Broken() == nil {
		t.Error("a gap did not break the decoding")
	}
}

// FuzzConn: any bytes both ways, in any cuts, never panic, and the
// decoder reports at most one event per frame.
func FuzzConn(f *testing.F) {
	client, server := conversation(f)
	f.Add(client, server, 3)
	f.Add([]byte(Preface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00"), []byte{0, 0, 1, 1, 5, 0, 0, 0, 1, 0x88}, 1)
	f.Fuzz(func(t *testing.T, client, server []byte, step int) {
		step = max(1, step%4096)
		ev := &events{}
		c := NewConn(ev)
		for i := 0; i < max(len(client), len(server)); i += step {
			if i < len(client) {
				c.Feed(true, client[i:min(i+step, len(client))], time.Time{})
			}
			if i < len(server) {
				c.Feed(false, server[i:min(i+step, len(server))], time.Time{})
			}
		}
		if len(ev.got) > (len(client)+len(server))/9+1 {
			t.Fatalf("%d events from %d bytes", len(ev.got), len(client)+len(server))
		}
	})
}
