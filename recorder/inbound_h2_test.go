package recorder

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/grpctest"
	"github.com/replaykit/replay/snapshots"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// h2cClient speaks HTTP/2 with prior knowledge, as curl --http2-prior-knowledge.
func h2cClient() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}}
}

// TestInboundHTTP2REST: one listener takes h2c and HTTP/1.1, told apart by
// the preface; REST over h2c goes on over h2c and is recorded like
// HTTP/1.1, with its version, body and trailers.
func TestInboundHTTP2REST(t *testing.T) {
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-Checksum")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"proto":%q,"got":%q}`, r.Proto, body)
		w.Header().Set("X-Checksum", "c0ffee")
	}))
	app.Config.Protocols = InboundProtocols()
	app.Start()
	defer app.Close()
	sink := newMemSink()
	in, err := NewInbound(InboundConfig{Target: mustURL(t, app.URL), Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveInbound(t, in)
	for _, c := range []struct {
		client *http.Client
		proto  string
	}{{h2cClient(), "HTTP/2.0"}, {rawClient, "HTTP/1.1"}} {
		res, err := c.client.Post("http://"+addr+"/orders/42", "application/json", strings.NewReader(`{"qty":1}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if want := fmt.Sprintf(`{"proto":%q,"got":"{\"qty\":1}"}`, c.proto); string(body) != want || res.Proto != c.proto {
			t.Errorf("%s client got %s %s, want %s", c.proto, res.Proto, body, want)
		}
		if res.Trailer.Get("X-Checksum") != "c0ffee" {
			t.Errorf("%s: trailer %v not passed on", c.proto, res.Trailer)
		}
		e := sink.wait(t, 1)[0]
		sink.mu.Lock()
		sink.exchanges = nil
		sink.mu.Unlock()
		if e.Proto != c.proto || e.Transport() != map[string]string{"HTTP/2.0": "h2c", "HTTP/1.1": "http/1.1"}[c.proto] ||
			string(e.RequestBody) != `{"qty":1}` || string(e.ResponseBody) != string(body) || e.Status != 200 ||
			e.ResponseTrailer.Get("X-Checksum") != "c0ffee" || snapshots.EndpointOf(e, nil) != "POST /orders/{id}" || e.Messages != nil {
			t.Errorf("%s recorded %+v", c.proto, e)
		}
	}
}

// TestSessionInboundTLS records gRPC and REST over TLS (h2 by ALPN, with a
// certificate from replay's CA), to an app in the clear and to one over
// TLS, into a snapshot file.
func TestSessionInboundTLS(t *testing.T) {
	authority, err := ca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := authority.Leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, upstreamTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("upstream TLS %v", upstreamTLS), func(t *testing.T) {
			var cert *tls.Certificate
			scheme := "http"
			if upstreamTLS {
				cert, scheme = leaf, "https"
			}
			srv := grpctest.Start(t, cert)
			path := filepath.Join(t.TempDir(), "tls.snap")
			s, err := NewSession(SessionConfig{
				Snapshot:    path,
				Inbound:     []SessionInbound{{Listen: "127.0.0.1:0", Target: mustURL(t, scheme+"://"+srv.Addr), TLS: authority.TLSConfig("127.0.0.1")}},
				UpstreamTLS: &tls.Config{RootCAs: authority.Pool()},
			})
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			addr := s.InboundAddrs()[0].String()
			creds := credentials.NewTLS(&tls.Config{RootCAs: authority.Pool(), ServerName: "127.0.0.1"})
			cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, c := range grpctest.Cases {
				c.Run(ctx, cc)
			}
			cc.Close()
			if err := s.Stop(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			got, _ := readBack(t, path)
			for _, e := range got {
				if e.Protocol != "https" || e.Transport() != "h2" || !strings.HasPrefix(e.Endpoint, "gRPC grpc.testing.") {
					t.Errorf("exchange %d: %s %s %s", e.ID, e.Protocol, e.Transport(), e.Endpoint)
				}
			}
			checkGRPCRecording(t, srv.Calls(), got)
		})
	}
}
