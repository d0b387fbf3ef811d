package mock

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/replaykit/replay/snapshots"
)

// TestListen: the forward proxy and a per-service listener answer from the
// recording; Stop ends both.
func TestListen(t *testing.T) {
	ex := &snapshots.Exchange{ID: 1, Direction: snapshots.Outbound, Protocol: "http", Service: "api.test:80",
		Method: "GET", URL: "http://api.test:80/v1/items", Status: 200, ResponseBody: []byte("items")}
	s := newServer(t, Config{Exchanges: []*snapshots.Exchange{ex}, CA: testCA(t)})
	l, err := s.Listen("127.0.0.1:0", []Serve{{Listen: "127.0.0.1:0", Service: "api.test:80"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Proxy == nil || len(l.Serve) != 1 || l.Server() != s {
		t.Fatalf("Listening %+v: want a proxy and one service listener", l)
	}
	for _, c := range []*http.Client{proxyClient(t, "http://"+l.Proxy.Addr().String(), nil), http.DefaultClient} {
		url := "http://api.test:80/v1/items"
		if c == http.DefaultClient {
			url = "http://" + l.Serve[0].Addr().String() + "/v1/items"
		}
		res, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(body) != "items" {
			t.Errorf("GET %s = %d %q; want the recorded 200 items", url, res.StatusCode, body)
		}
	}
	l.Stop()
	if c, err := net.Dial("tcp", l.Proxy.Addr().String()); err == nil {
		c.Close()
		t.Error("the proxy still accepts after Stop")
	}
}

// TestListenErrors: a service not recorded, or an address taken, leaves
// nothing listening.
func TestListenErrors(t *testing.T) {
	s := newServer(t, Config{CA: testCA(t)})
	if _, err := s.Listen("", []Serve{{Listen: "127.0.0.1:0", Service: "other.test:443"}}); !errors.Is(err, ErrUnknownService) {
		t.Errorf("Listen(an unknown service) = %v; want ErrUnknownService", err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, err = s.Listen(taken.Addr().String(), nil)
	var le *ListenError
	if !errors.As(err, &le) || le.Addr != taken.Addr().String() || le.Serve != (Serve{}) {
		t.Errorf("Listen(a taken address) = %v; want a ListenError naming it as the proxy", err)
	}
}
