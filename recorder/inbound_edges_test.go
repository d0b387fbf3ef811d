package recorder

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestInboundUpgrade: a protocol upgrade (as WebSocket does) passes through
// and is recorded with its 101.
func TestInboundUpgrade(t *testing.T) {
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "want Upgrade: echo", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
		line, _ := brw.ReadString('\n')
		brw.WriteString("echo: " + line)
		brw.Flush()
	})
	sink := newMemSink()
	proxy := startInbound(t, backend, InboundConfig{Sink: sink})
	conn, err := net.Dial("tcp", strings.TrimPrefix(proxy, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != 101 {
		t.Fatalf("upgrade response %v, %v", res, err)
	}
	io.WriteString(conn, "hi\n")
	line, _ := br.ReadString('\n')
	if line != "echo: hi\n" {
		t.Fatalf("over the upgraded connection got %q", line)
	}
	conn.Close()
	e := sink.wait(t, 1)[0]
	if e.Status != 101 || e.URL != "http://x:80/ws" && e.URL != "http://x/ws" {
		t.Errorf("recorded %d %s; want 101 http://x/ws", e.Status, e.URL)
	}
	if e.Service != "x:80" {
		t.Errorf("service %q; want the host with the default port, x:80", e.Service)
	}
}

func TestNewInboundErrors(t *testing.T) {
	sink := newMemSink()
	tests := []struct {
		name string
		cfg  InboundConfig
		want string
	}{
		{"no target", InboundConfig{Sink: sink}, "no target"},
		{"no sink", InboundConfig{Target: &url.URL{Scheme: "http", Host: "a:1"}}, "no sink"},
		{"bad scheme", InboundConfig{Sink: sink, Target: &url.URL{Scheme: "ftp", Host: "a:1"}}, `"ftp://a:1" is not an http`},
		{"no host", InboundConfig{Sink: sink, Target: &url.URL{Scheme: "http", Path: "/x"}}, "is not an http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewInbound(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v; want one containing %q", err, tt.want)
			}
		})
	}
}

func TestBufferPool(t *testing.T) {
	p := newBufferPool()
	b := p.Get()
	if len(b) != copyBufferSize {
		t.Fatalf("len %d", len(b))
	}
	p.Put(b)
	p.Put(make([]byte, 10)) // too small: dropped, never handed out
	for range 3 {
		if got := p.Get(); len(got) != copyBufferSize {
			t.Fatalf("got a buffer of %d bytes", len(got))
		}
	}
}

// TestInboundKeepsFraming: a response of known length reaches the client
// with its Content-Length (the proxy flushes it before recording, which must
// not turn it into a chunked one), a streamed one stays chunked.
func TestInboundKeepsFraming(t *testing.T) {
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush()
		} else {
			w.Header().Set("Content-Length", "5")
		}
		io.WriteString(w, "hello")
	})
	sink := newMemSink()
	proxy := startInbound(t, backend, InboundConfig{Sink: sink})
	for _, tt := range []struct {
		path    string
		length  int64
		chunked bool
	}{{"/sized", 5, false}, {"/chunked", -1, true}} {
		res, err := rawClient.Get(proxy + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		chunked := slices.Contains(res.TransferEncoding, "chunked")
		if string(body) != "hello" || res.ContentLength != tt.length || chunked != tt.chunked {
			t.Errorf("%s: body %q, Content-Length %d, chunked %v; want hello, %d, %v", tt.path, body, res.ContentLength, chunked, tt.length, tt.chunked)
		}
	}
	for _, e := range sink.wait(t, 2) {
		if string(e.ResponseBody) != "hello" {
			t.Errorf("%s recorded %q", e.URL, e.ResponseBody)
		}
	}
}
