package replayer

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/snapshots"
)

// FuzzGRPCExchange feeds recorded gRPC calls with arbitrary messages,
// encodings, statuses and deadlines to what a replay makes of them: the
// request sent (its client messages framed back exactly, as recorded) and
// the recording's answer as compared (JSON, whatever the bytes).
func FuzzGRPCExchange(f *testing.F) {
	f.Add([]byte("\x0a\x06Lisbon"), []byte("\x08\x96\x01"), "", "0", "5S", false)
	f.Add([]byte{}, []byte("not protobuf \xff"), "gzip", "14", "100m", true)
	f.Add([]byte("\x12\x00"), []byte{}, "snappy", "x", "1n", true)
	f.Fuzz(func(t *testing.T, client, server []byte, enc, status, timeout string, compressed bool) {
		e := &snapshots.Exchange{
			ID: 1, Direction: snapshots.Inbound, Proto: "HTTP/2.0", Method: "POST", Duration: time.Millisecond,
			URL:             "http://svc/route.Routes/Find",
			RequestHeader:   http.Header{"Content-Type": {"application/grpc"}, "Grpc-Encoding": {enc}, "Grpc-Timeout": {timeout}},
			Status:          200,
			ResponseTrailer: http.Header{"Grpc-Status": {status}},
			Messages: []snapshots.Message{
				{From: snapshots.FromClient, Data: client, Size: int64(len(client)), Compressed: compressed},
				{From: snapshots.FromServer, Data: server, Size: int64(len(server))},
			},
		}
		g, body, err := newGRPCTemplate(e)
		if err != nil {
			return // an encoding replay cannot compress with: refused with an error
		}
		fr, err := grpcwire.ReadFrame(bytesReader(body), 1<<30)
		if err != nil || fr.Compressed != compressed {
			t.Fatalf("request body does not frame the client message back: %v", err)
		}
		if !compressed && string(fr.Data) != string(client) {
			t.Fatalf("client message %q sent as %q", client, fr.Data)
		}
		if g.cancelAfter < 0 || g.timeout < 0 {
			t.Fatalf("negative cancel %s or timeout %s", g.cancelAfter, g.timeout)
		}
		a := GRPCAnswer(e, nil)
		if !json.Valid(a.ResponseBody) {
			t.Fatalf("answer document is not JSON: %q", a.ResponseBody)
		}
	})
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// TestGRPCDeadline: a call ends at the earliest of the replay's timeout,
// its recorded grpc-timeout and its recorded cancel, even when its
// grpc-timeout is the largest one can write (years).
func TestGRPCDeadline(t *testing.T) {
	sent := time.Now()
	until := sent.Add(30 * time.Second)
	huge, _ := grpcwire.ParseTimeout("99999999H")
	for _, c := range []struct {
		g     grpcTemplate
		after time.Duration
		cause error
	}{
		{grpcTemplate{}, 30 * time.Second, errTimeout},
		{grpcTemplate{timeout: huge}, 30 * time.Second, errTimeout},
		{grpcTemplate{timeout: time.Second}, time.Second, errGRPCDeadline},
		{grpcTemplate{timeout: time.Second, cancelAfter: time.Millisecond}, time.Millisecond, errClientCancel},
	} {
		d, cause := c.g.deadline(sent, until)
		if d.Sub(sent) != c.after || cause != c.cause {
			t.Errorf("%+v: ends after %s (%v), want %s (%v)", c.g, d.Sub(sent), cause, c.after, c.cause)
		}
	}
}
