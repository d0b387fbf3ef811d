package recorder

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSessionRecordsClientConnections: the inbound proxy records, with each
// request, the client connection it came on: the streams of one h2c
// connection share one, the requests of one HTTP/1.1 keep-alive connection
// another, a second HTTP/1.1 client a third.
func TestSessionRecordsClientConnections(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) }))
	defer app.Close()
	path := filepath.Join(t.TempDir(), "c.snap")
	s, err := NewSession(SessionConfig{Snapshot: path, Inbound: []SessionInbound{{Listen: "127.0.0.1:0", Target: mustURL(t, app.URL)}}})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	front := "http://" + s.InboundAddrs()[0].String()
	clients := map[string]*http.Client{"h2c": h2cClient(), "a": {Transport: &http.Transport{}}, "b": {Transport: &http.Transport{}}}
	for range 3 {
		for name, c := range clients {
			res, err := c.Get(front + "/" + name)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	for _, c := range clients {
		c.CloseIdleConnections()
	}
	if err := s.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	xs, _ := readBack(t, path)
	conn := map[string]int64{}
	for _, x := range xs {
		name := x.URL[strings.LastIndex(x.URL, "/")+1:]
		if x.ClientConn == 0 || (conn[name] != 0 && conn[name] != x.ClientConn) {
			t.Errorf("%s %s: client connection %d, before %d", x.Proto, x.URL, x.ClientConn, conn[name])
		}
		conn[name] = x.ClientConn
	}
	if len(xs) != 9 || conn["h2c"] == conn["a"] || conn["a"] == conn["b"] || conn["h2c"] == conn["b"] {
		t.Errorf("%d exchanges, client connections %v; want 9 on three connections", len(xs), conn)
	}
}
