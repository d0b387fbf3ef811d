package mock

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/grpctest"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
)

// connectDialer dials addr through an HTTP proxy's CONNECT, as grpc-go
// does for HTTPS_PROXY.
func connectDialer(proxy string) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", proxy)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != 200 {
			c.Close()
			return nil, fmt.Errorf("CONNECT %s: %v %v", addr, res, err)
		}
		return c, nil
	}
}

const uuidA, uuidB = "0b7e8f7c-8d1e-4a63-9a2b-6f1c2d3e4f50", "9c3a1b2d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"

// recordGRPC records the interop cases and one call carrying a UUID
// through the outbound recorder to grpc-go's interop server, then stops
// the server; it returns the snapshot.
func recordGRPC(t *testing.T, proxyCA *ca.CA, secure bool) string {
	t.Helper()
	upstreamCA, err := ca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var cert *tls.Certificate
	if secure {
		if cert, err = upstreamCA.Leaf("grpc.test"); err != nil {
			t.Fatal(err)
		}
	}
	srv := grpctest.Start(t, cert)
	path := filepath.Join(t.TempDir(), "grpc.snap")
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := recorder.NewOutbound(recorder.OutboundConfig{Sink: w, CA: proxyCA, Resolve: map[string]string{"grpc.test:50051": srv.Addr},
		UpstreamTLS: &tls.Config{RootCAs: upstreamCA.Pool()}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(out)
	cc := dialGRPC(t, strings.TrimPrefix(hs.URL, "http://"), proxyCA, secure)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range grpctest.Cases {
		c.Run(ctx, cc)
	}
	if _, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 3, Payload: &testpb.Payload{Body: []byte(uuidA)}}); err != nil {
		t.Fatal(err)
	}
	cc.Close()
	hs.Close()
	if err := out.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	return path
}

// dialGRPC is a gRPC client of grpc.test:50051 through the proxy at
// proxyAddr, in the clear or over TLS trusting authority.
func dialGRPC(t *testing.T, proxyAddr string, authority *ca.CA, secure bool) *grpc.ClientConn {
	t.Helper()
	creds := insecure.NewCredentials()
	if secure {
		creds = credentials.NewTLS(&tls.Config{RootCAs: authority.Pool(), ServerName: "grpc.test"})
	}
	cc, err := grpc.NewClient("passthrough:///grpc.test:50051", grpc.WithTransportCredentials(creds), grpc.WithContextDialer(connectDialer(proxyAddr)))
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// TestMockGRPCInterop records grpc-go's interop cases, stops the server,
// and runs the interop client against the mock: through the forward proxy
// (h2c in the tunnel, and TLS intercepted with replay's CA) and as a
// service listener given as the client's target. Every case passes (the
// interop client checks each answer: messages, metadata, trailers and
// statuses), a call differing only in a UUID matches at the loose level, a
// call that was not recorded misses with the closest recorded one named,
// and the mock counts every call under its method.
func TestMockGRPCInterop(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("TLS=%v", secure), func(t *testing.T) {
			proxyCA := testCA(t)
			snap, err := snapshots.Open(recordGRPC(t, proxyCA, secure))
			if err != nil {
				t.Fatal(err)
			}
			defer snap.Close()
			s := newServer(t, Config{Snapshot: snap, CA: proxyCA})
			proxy := startMock(t, s)
			cc := dialGRPC(t, strings.TrimPrefix(proxy, "http://"), proxyCA, secure)
			defer cc.Close()
			s.Begin(1, "") // one replayed request in flight: every call is its
			runMocked(t, cc)
			counts, complete := s.End(1)
			unary := 0
			for _, c := range counts {
				if c.Endpoint == "gRPC grpc.testing.TestService/UnaryCall" {
					unary += c.Count
				}
				if !strings.HasPrefix(c.Endpoint, "gRPC grpc.testing.") || c.Service != "grpc.test:50051" {
					t.Errorf("upstream count %+v", c)
				}
			}
			// large_unary, status_code_and_message, special_status_message,
			// custom_metadata, the UUID call and the miss
			if !complete || unary != 6 {
				t.Errorf("upstream counts %+v (complete %v): %d unary calls, want 6", counts, complete, unary)
			}
			if st := s.Stats(); st.Misses < 1 || st.Loose != 1 || st.Exact < int64(len(grpctest.Cases)) {
				t.Errorf("stats %+v: want the miss, 1 loose match, every case exact", st)
			}
			for _, me := range s.MissLog() {
				// The deliberate miss; and the calls the client gives up on
				// (cancel_after_begin, timeout_on_sleeping_server's 1 ms
				// deadline), which the recorder and the mock may see with
				// their messages cut or not at all: the client's own
				// checks pass whatever the mock says.
				if !strings.HasSuffix(me.Request, "/UnaryCall") && !strings.HasSuffix(me.Request, "/StreamingInputCall") &&
					!strings.HasSuffix(me.Request, "/FullDuplexCall") {
					t.Errorf("miss %v", me)
				}
			}
			if secure {
				return
			}
			// A fresh mock (answers to the same request go in recorded order,
			// so a second round needs its own): a service listener.
			s = newServer(t, Config{Snapshot: snap, CA: proxyCA})
			l, err := s.Listen("", []Serve{{Listen: "127.0.0.1:0", Service: "grpc.test:50051"}})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Stop()
			direct, err := grpc.NewClient(l.Serve[0].Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			runMocked(t, direct)
		})
	}
}

// runMocked runs the interop cases, the noisy call and a miss.
func runMocked(t *testing.T, cc *grpc.ClientConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range grpctest.Cases {
		c.Run(ctx, cc)
	}
	tc := testgrpc.NewTestServiceClient(cc)
	resp, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 3, Payload: &testpb.Payload{Body: []byte(uuidB)}})
	if err != nil || len(resp.GetPayload().GetBody()) != 3 {
		t.Errorf("call differing in a UUID: %v %v", resp, err)
	}
	_, err = tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 77})
	if st := status.Convert(err); st.Code() != codes.Unknown || !strings.Contains(st.Message(), "mock miss") ||
		!strings.Contains(st.Message(), "closest recorded") {
		t.Errorf("unrecorded call: %v", err)
	}
}
