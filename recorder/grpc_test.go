package recorder

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/grpctest"
	"github.com/replaykit/replay/snapshots"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/proto"
)

// serveInbound serves in on loopback as a session does (HTTP/1.1 and h2c
// on one listener) and returns its address.
func serveInbound(t *testing.T, in *Inbound) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: in, Protocols: InboundProtocols()}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// recordGRPC starts grpc-go's interop server and a recorder in front of
// it, recording into sink; addr is the recorder's.
func recordGRPC(t *testing.T) (srv *grpctest.Server, sink *memSink, addr string) {
	t.Helper()
	srv = grpctest.Start(t, nil)
	sink = newMemSink()
	in, err := NewInbound(InboundConfig{Target: mustURL(t, "http://"+srv.Addr), Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	return srv, sink, serveInbound(t, in)
}

// quiet waits until no exchange has been recorded for a while and returns
// them all.
func (s *memSink) quiet(t *testing.T, min int) []*snapshots.Exchange {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-s.added:
		case <-time.After(300 * time.Millisecond):
			if all := s.all(); len(all) >= min {
				return all
			}
		case <-deadline:
			t.Fatalf("waited 30s; %d exchanges recorded, want at least %d", len(s.all()), min)
		}
	}
}

// TestInboundGRPCInterop puts the recorder between grpc-go's interop
// client and server, over h2c, and runs every interop case that needs
// nothing but the server: each passes (the client checks every answer),
// and each call the server saw is recorded once, with the server's status
// and as many messages each way as the server read and wrote.
func TestInboundGRPCInterop(t *testing.T) {
	srv, sink, addr := recordGRPC(t)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range grpctest.Cases {
		c.Run(ctx, cc)
	}
	// A call compressed both ways: recorded decompressed.
	tc := testgrpc.NewTestServiceClient(cc)
	resp, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 5000, Payload: &testpb.Payload{Body: make([]byte, 7000)},
		ResponseCompressed: &testpb.BoolValue{Value: true}}, grpc.UseCompressor(gzip.Name))
	if err != nil || len(resp.GetPayload().GetBody()) != 5000 {
		t.Fatalf("compressed call: %v", err)
	}
	calls := srv.SettledCalls()
	got := sink.quiet(t, len(calls)+1) // + the call to a service the server lacks, which no handler sees
	checkGRPCRecording(t, calls, got)
	checkMessages(t, got)
}

// checkMessages looks inside the recorded messages: the large unary call's
// request decodes to what the interop client sent, the compressed call's
// are decompressed, and each call's messages are in time order.
func checkMessages(t *testing.T, got []*snapshots.Exchange) {
	t.Helper()
	var large, compressed bool
	for _, e := range got {
		for i := 1; i < len(e.Messages); i++ {
			if e.Messages[i].Offset < e.Messages[i-1].Offset {
				t.Errorf("exchange %d: messages out of time order", e.ID)
			}
		}
		cm := e.MessagesFrom(snapshots.FromClient)
		if !strings.HasSuffix(e.URL, "/UnaryCall") || len(cm) != 1 {
			continue
		}
		var req testpb.SimpleRequest
		if err := proto.Unmarshal(cm[0].Data, &req); err != nil {
			t.Errorf("exchange %d: recorded request does not decode: %v", e.ID, err)
			continue
		}
		switch {
		case req.GetResponseSize() == 314159 && len(req.GetPayload().GetBody()) == 271828:
			large = true
			if sm := e.MessagesFrom(snapshots.FromServer); len(sm) != 1 || sm[0].Size < 314159 {
				t.Errorf("large unary: server messages %d", len(sm))
			}
		case req.GetResponseSize() == 5000:
			compressed = true
			sm := e.MessagesFrom(snapshots.FromServer)
			if !cm[0].Compressed || len(sm) != 1 || !sm[0].Compressed || sm[0].Encoding != "" {
				t.Errorf("compressed call: client %+v server %d", cm[0].Compressed, len(sm))
			}
			if e.RequestBodySize >= 7000 {
				t.Errorf("compressed call: %d bytes on the wire, not compressed?", e.RequestBodySize)
			}
		}
	}
	if !large || !compressed {
		t.Errorf("large unary recorded %v, compressed call %v", large, compressed)
	}
}

// checkGRPCRecording matches the server's calls with the recorded
// exchanges, in order per method.
func checkGRPCRecording(t *testing.T, calls []grpctest.Call, got []*snapshots.Exchange) {
	t.Helper()
	byMethod := map[string][]*snapshots.Exchange{}
	for _, e := range got {
		if !e.IsGRPC() || e.Proto != "HTTP/2.0" {
			t.Errorf("exchange %d %s: not gRPC over HTTP/2 (%s)", e.ID, e.URL, e.Proto)
		}
		m, _ := snapshots.GRPCMethod(snapshots.EndpointOf(e, nil))
		byMethod[m] = append(byMethod[m], e)
	}
	for _, m := range []string{"/grpc.testing.UnimplementedService/UnimplementedCall"} {
		if len(byMethod[m]) != 1 {
			t.Errorf("%s recorded %d times, want once", m, len(byMethod[m]))
			continue
		}
		if code, _, ok := byMethod[m][0].GRPCStatus(); !ok || code != 12 {
			t.Errorf("%s: status %d %v, want UNIMPLEMENTED (12)", m, code, ok)
		}
		delete(byMethod, m)
	}
	// Calls end in the recorder after the server, in another order under
	// load: match each server call to a recording of its method, the ones
	// that agree in status and messages both ways first, then in status
	// and client messages, then any left.
	picked := make([]*snapshots.Exchange, len(calls))
	for _, exact := range []func(*snapshots.Exchange, grpctest.Call) bool{sameCall, sameStatusAndRequest, func(*snapshots.Exchange, grpctest.Call) bool { return true }} {
		for i, c := range calls {
			if picked[i] != nil {
				continue
			}
			for _, e := range byMethod[c.Method] {
				if exact(e, c) {
					picked[i] = e
					byMethod[c.Method] = remove(byMethod[c.Method], e)
					break
				}
			}
		}
	}
	for i, c := range calls {
		e := picked[i]
		if e == nil {
			t.Errorf("server call %+v not recorded", c)
			continue
		}
		code, _, ok := e.GRPCStatus()
		// The client gave up (cancel_after_begin, a deadline): the recorder
		// may see no status, or the server a call it ended itself.
		cancelled := c.Code == 1 || c.Code == 4 || e.Error != ""
		if !cancelled && (!ok || code != c.Code) {
			t.Errorf("%s: recorded status %d (%v), the server's was %d", c.Method, code, ok, c.Code)
		}
		if cancelled {
			continue
		}
		nc, ns := len(e.MessagesFrom(snapshots.FromClient)), len(e.MessagesFrom(snapshots.FromServer))
		if nc != c.Received || ns != c.Sent {
			t.Errorf("%s: recorded %d client and %d server messages; the server read %d and wrote %d", c.Method, nc, ns, c.Received, c.Sent)
		}
		for _, m := range e.Messages {
			if m.Truncated() && m.Size <= DefaultBodyLimit {
				t.Errorf("%s: a message of %d bytes cut to %d", c.Method, m.Size, len(m.Data))
			}
		}
	}
	for m, es := range byMethod {
		for _, e := range es {
			if e.Error != "" {
				continue // cancelled by the client before the server's handler ran (cancel_after_begin)
			}
			t.Errorf("recorded %s (exchange %d) that the server did not see", m, e.ID)
		}
	}
}

// sameCall reports whether e records c: its status and its messages
// each way.
func sameCall(e *snapshots.Exchange, c grpctest.Call) bool {
	return sameStatusAndRequest(e, c) && len(e.MessagesFrom(snapshots.FromServer)) == c.Sent
}

// sameStatusAndRequest reports whether e has c's status and client
// messages.
func sameStatusAndRequest(e *snapshots.Exchange, c grpctest.Call) bool {
	code, _, ok := e.GRPCStatus()
	return ok && code == c.Code && len(e.MessagesFrom(snapshots.FromClient)) == c.Received
}

func remove(es []*snapshots.Exchange, x *snapshots.Exchange) []*snapshots.Exchange {
	out := es[:0:0]
	for _, e := range es {
		if e != x {
			out = append(out, e)
		}
	}
	return out
}

// TestInboundGRPCAbandonedMessage: a client that sends a message's first
// bytes and then gives up (cancels: RST_STREAM) leaves a call with no whole
// message, recorded as canceled and not as a body cut at recording (which
// a replay would refuse without --allow-truncated). grpc-go's interop
// client does it now and then in timeout_on_sleeping_server.
func TestInboundGRPCAbandonedMessage(t *testing.T) {
	_, sink, addr := recordGRPC(t)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/grpc.testing.TestService/FullDuplexCall", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	go func() {
		pw.Write([]byte{0, 0, 0, 0x6a, 0x2e}) // a 27,182-byte message...
		pw.Write(make([]byte, 100))           // ...of which 100 bytes come
	}()
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, n, a string, _ *tls.Config) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, n, a)
	}}
	defer tr.CloseIdleConnections()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := tr.RoundTrip(req); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
	// Cancel once the proxy has the bytes: the server waits for the rest.
	time.Sleep(200 * time.Millisecond)
	cancel()
	<-done
	got := sink.quiet(t, 1)
	if len(got) != 1 {
		t.Fatalf("%d exchanges recorded, want 1", len(got))
	}
	e := got[0]
	if e.RequestTruncated() || len(e.MessagesFrom(snapshots.FromClient)) != 0 || e.RequestBodySize != 105 {
		t.Errorf("abandoned call: truncated %v, %d client messages, %d bytes (want false, 0, 105)",
			e.RequestTruncated(), len(e.MessagesFrom(snapshots.FromClient)), e.RequestBodySize)
	}
	if code, _, _ := e.GRPCStatus(); code != 1 {
		t.Errorf("abandoned call recorded with status %d, want 1 (CANCELLED)", code)
	}
}
