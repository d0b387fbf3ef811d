package listen

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/replaykit/replay/internal/syncbuf"
)

func TestAddr(t *testing.T) {
	for in, want := range map[string]string{
		":8082": "127.0.0.1:8082", "8082": "127.0.0.1:8082", ":0": "127.0.0.1:0",
		"0.0.0.0:8082": "0.0.0.0:8082", "[::]:8082": "[::]:8082", "10.1.2.3:1": "10.1.2.3:1", "db.test:5432": "db.test:5432",
		"": "", "8082x": "", "host:": "", "host:99999": "",
	} {
		got, err := Addr(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("Addr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for addr, want := range map[string]bool{
		"127.0.0.1:1": false, "[::1]:1": false, "localhost:1": false, ":1": false,
		"0.0.0.0:1": true, "[::]:1": true, "10.1.2.3:1": true, "example.test:1": true,
	} {
		if got := Exposed(addr); got != want {
			t.Errorf("Exposed(%q) = %v; want %v", addr, got, want)
		}
	}
}

// TestFlags: the defaults, "0" turning a bound off, bad values refused.
func TestFlags(t *testing.T) {
	var o Limits
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.AddFlags(fs)
	if r := o.Resolved(); r != (Limits{DefaultReadHeaderTimeout, DefaultIdleTimeout, DefaultSQLStartupTimeout, DefaultSQLIdleTimeout, DefaultMaxConns}) {
		t.Errorf("defaults %+v", r)
	}
	// --help shows each default: pflag's DefValue is the value registered.
	for name, want := range map[string]string{"max-conns": "4096", "idle-timeout": "2m0s", "read-header-timeout": "10s",
		"sql-startup-timeout": "10s", "sql-idle-timeout": "30m0s"} {
		if got := fs.Lookup(name).DefValue; got != want {
			t.Errorf("--%s default %q, want %q", name, got, want)
		}
	}
	if err := fs.Parse([]string{"--idle-timeout", "0", "--max-conns", "0", "--read-header-timeout", "3s"}); err != nil {
		t.Fatal(err)
	}
	if r := o.Resolved(); r.IdleTimeout != 0 || r.MaxConns != 0 || r.ReadHeaderTimeout != 3*time.Second {
		t.Errorf("after 0, 0, 3s: %+v", r)
	}
	if startup, idle := o.SQLTimeouts(); startup != DefaultSQLStartupTimeout || idle != DefaultSQLIdleTimeout {
		t.Errorf("SQLTimeouts = %v, %v", startup, idle)
	}
	for _, bad := range [][]string{{"--idle-timeout", "-1s"}, {"--max-conns", "-2"}, {"--sql-idle-timeout", "soon"}} {
		if err := fs.Parse(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestLimit: the listener holds MaxConns connections; the next waits until
// one closes, and the limit is logged once.
func TestLimit(t *testing.T) {
	logs := &syncbuf.Buffer{}
	l, err := Limits{MaxConns: 1}.Listen(":0", "test listener", "", slog.New(slog.NewTextHandler(logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first := <-accepted
	select {
	case <-accepted:
		t.Fatal("a second connection was accepted beyond the limit of 1")
	case <-time.After(200 * time.Millisecond):
	}
	first.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no waiting connection was accepted once the first closed")
	}
	if n := strings.Count(logs.String(), "connection limit reached"); n != 1 {
		t.Errorf("logged %d times; want once:\n%s", n, logs.String())
	}
	if host, _, _ := net.SplitHostPort(l.Addr().String()); host != "127.0.0.1" {
		t.Errorf("listens on %s; want 127.0.0.1", l.Addr())
	}
}
