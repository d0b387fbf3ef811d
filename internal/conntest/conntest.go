// Package conntest drives raw client connections against replay's
// listeners in tests: slow headers (slowloris), idle keep-alive
// connections, CONNECT tunnels. Tests only: it imports testing.
package conntest

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Dial connects to addr.
func Dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Tunnel opens a CONNECT tunnel to target through the forward proxy at
// proxy and, when roots is set, speaks TLS inside it (HTTP/1.1 only)
// trusting roots.
func Tunnel(t testing.TB, proxy, target string, roots *x509.CertPool) net.Conn {
	t.Helper()
	c := Dial(t, proxy)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %v %v", target, resp, err)
	}
	if br.Buffered() > 0 {
		t.Fatalf("CONNECT %s: bytes after the answer", target)
	}
	c.SetDeadline(time.Time{})
	if roots == nil {
		return c
	}
	host, _, _ := net.SplitHostPort(target)
	tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: host, NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS in the tunnel to %s: %v", target, err)
	}
	return tc
}

// Closed waits until the server closes c (a read ends in EOF or an error
// other than a timeout) and returns how long that took; it fails t when c
// is still open after within.
func Closed(t testing.TB, c net.Conn, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(within))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server still holds the connection after %v", within)
	}
	return time.Since(start)
}

// StallHeaders sends the first lines of a request's headers on c, never
// the blank line that ends them, and returns how long until the server
// closed c (failing t after within).
func StallHeaders(t testing.TB, c net.Conn, within time.Duration) time.Duration {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: slow.test\r\nX-Slow: 1\r\n"); err != nil {
		t.Fatal(err)
	}
	return Closed(t, c, within)
}

// ClosedAfter runs each case as a subtest: a case stalls a connection and
// returns how long until the server closed it (Closed, StallHeaders); a
// close sooner than half of timeout fails, as that is not the timeout's
// doing.
func ClosedAfter(t *testing.T, timeout time.Duration, cases map[string]func(*testing.T) time.Duration) {
	t.Helper()
	for name, stall := range cases {
		t.Run(name, func(t *testing.T) {
			if d := stall(t); d < timeout/2 {
				t.Errorf("closed after %v; want the timeout %v", d, timeout)
			}
		})
	}
}

// BusyThenIdle sends n requests for / to host on c, half of idle apart, so
// that c stays open, each answered 200 with body; then it checks that the
// server closes c about idle after the last (not at once).
func BusyThenIdle(t *testing.T, c net.Conn, n int, host, body string, idle time.Duration) {
	t.Helper()
	for range n {
		if code, got := Request(t, c, "/", host); code != 200 || got != body {
			t.Fatalf("GET / = %d %q; want 200 %q", code, got, body)
		}
		time.Sleep(idle / 2)
	}
	if d := Closed(t, c, 5*time.Second); d < idle/4 {
		t.Errorf("closed %v after the last request; want about %v", d, idle)
	}
}

// Request sends a request with target (a path, or an absolute URL for a
// forward proxy) and host on c, keeping it alive, and reads the whole
// response; it returns the status and body.
func Request(t testing.TB, c net.Conn, target, host string) (int, string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, host); err != nil {
		t.Fatal(err)
	}
	return readResponse(t, c)
}

// readResponse reads one response from c, byte by byte so that nothing
// after it is taken from c.
func readResponse(t testing.TB, c net.Conn) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReaderSize(oneByte{c}, 16), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response body: %v", err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// Answered reports whether a response to a request already sent on c comes
// within d (reading it whole when it does).
func Answered(t testing.TB, c net.Conn, d time.Duration) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false
		}
		t.Fatalf("waiting for an answer: %v", err)
	}
	return true
}

// oneByte reads at most one byte at a time.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}
