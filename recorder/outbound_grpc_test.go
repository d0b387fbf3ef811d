package recorder

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/grpctest"
	"github.com/replaykit/replay/snapshots"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
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
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil || res.StatusCode != 200 {
			c.Close()
			return nil, fmt.Errorf("CONNECT %s: %v %v", addr, res, err)
		}
		if br.Buffered() > 0 {
			c.Close()
			return nil, fmt.Errorf("CONNECT %s: bytes after the reply", addr)
		}
		return c, nil
	}
}

// TestOutboundGRPC: an app's gRPC calls through the outbound proxy's
// CONNECT tunnel, in the clear (h2c inside the tunnel) and over TLS (h2 by
// ALPN, intercepted with replay's CA; the upstream over TLS too), to
// grpc-go's interop server: every case passes, and each call is recorded as
// an outbound gRPC exchange with the server's status and messages.
func TestOutboundGRPC(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("TLS=%v", secure), func(t *testing.T) {
			e := newOBEnv(t)
			var cert *tls.Certificate
			if secure {
				leaf, err := e.upstreamCA.Leaf("grpc.test")
				if err != nil {
					t.Fatal(err)
				}
				cert = leaf
			}
			srv := grpctest.Start(t, cert)
			e.resolve["grpc.test:50051"] = srv.Addr
			e.start()
			creds := insecure.NewCredentials()
			if secure {
				creds = credentials.NewTLS(&tls.Config{RootCAs: e.proxyCA.Pool(), ServerName: "grpc.test"})
			}
			cc, err := grpc.NewClient("passthrough:///grpc.test:50051", grpc.WithTransportCredentials(creds),
				grpc.WithContextDialer(connectDialer(e.proxyURL.Host)))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, c := range grpctest.Cases {
				c.Run(ctx, cc)
			}
			calls := srv.SettledCalls()
			var got []*snapshots.Exchange
			deadline := time.Now().Add(30 * time.Second)
			for len(got) < len(calls)+1 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				got = e.sink.all()
			}
			time.Sleep(300 * time.Millisecond)
			got = e.sink.all()
			for _, x := range got {
				if x.Direction != snapshots.Outbound || x.Service != "grpc.test:50051" {
					t.Errorf("exchange %d: %s %s", x.ID, x.Direction, x.Service)
				}
			}
			checkGRPCRecording(t, calls, got)
		})
	}
}
