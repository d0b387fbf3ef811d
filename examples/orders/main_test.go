package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/replaykit/replay/examples/internal/testnet"
	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/examples/orders/catalog"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/internal/syncbuf"
)

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// binary builds the program once per test run and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		if build.dir, build.err = os.MkdirTemp("", "orders-build-"); build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "orders")
		out, err := exec.Command(goBin, "build", "-o", build.bin, ".").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build: %w: %s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

// environ is the test process's environment without the variables the
// program reads, plus extra.
func environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "DATABASE_URL", "PORT", "HOST", "APP_SLOW", "APP_SQLCOMMENT", "CATALOG_URL",
			"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// portTaken reports whether the program exited within a second saying its
// port is in use (it then said nothing else worth keeping).
func portTaken(exited chan error, stderr *syncbuf.Buffer) bool {
	select {
	case err := <-exited:
		if strings.Contains(stderr.String(), "address already in use") {
			return true
		}
		exited <- err
	case <-time.After(time.Second):
	}
	return false
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestProgram runs the built program as a user would: real environment,
// catalog reached by hostname through HTTPS_PROXY and trusted through
// SSL_CERT_FILE; then SIGTERM, and it exits 0.
func TestProgram(t *testing.T) {
	bin := binary(t)
	const host = "catalog.orders.test"
	cert := testnet.NewCert(t, host)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cat, err := catalog.Start(ctx, cert.TLS, "")
	if err != nil {
		t.Fatal(err)
	}
	proxy := testnet.NewProxy(t, cat.Addr())

	// The port is free when picked; another process on a busy machine may
	// take it before the program binds it: then start again on another.
	var (
		port   string
		stderr *syncbuf.Buffer
		exited chan error
		cmd    *exec.Cmd
	)
	for attempt := 1; ; attempt++ {
		port, stderr, exited = freePort(t), new(syncbuf.Buffer), make(chan error, 1)
		cmd = exec.Command(bin)
		cmd.Env = environ(
			"DATABASE_URL="+pgtest.Database(t),
			"PORT="+port,
			"APP_SLOW=1",
			"CATALOG_URL=https://"+host,
			"HTTPS_PROXY="+proxy.URL,
			"SSL_CERT_FILE="+cert.WritePEM(t),
		)
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c, done := cmd, exited
		go func() { done <- c.Wait() }()
		t.Cleanup(func() { c.Process.Kill() })
		if attempt == 3 || !portTaken(exited, stderr) {
			break
		}
	}

	base := "http://127.0.0.1:" + port
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			t.Fatalf("program exited before it was up: %v\n%s", err, stderr.String())
		default:
		}
		resp, err := http.Get(base + "/orders")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("program not up after 60s: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	if _, err := app.Seed(ctx, base, nil, 2); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/orders", "/catalog"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !json.Valid(body) {
			t.Errorf("GET %s = %d %s, want 200 with JSON", path, resp.StatusCode, body)
		}
	}
	if h := proxy.Hosts(); len(h) != 1 || h[0] != host+":443" {
		t.Errorf("HTTPS_PROXY was asked for %q, want [%s:443]", h, host)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("program still running 30s after SIGTERM\n%s", stderr.String())
	}
	out := stderr.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `msg="orders listening" url=http://127.0.0.1:`+port+" slow=true") {
		t.Errorf("stderr = %q, want exactly one \"orders listening\" line", out)
	}
}

// TestProgramFailsClearly checks the exit status 1 and the one-line error
// for a missing or unreachable database.
func TestProgramFailsClearly(t *testing.T) {
	bin := binary(t)
	tests := []struct {
		name, wantErr string
		env           []string
	}{
		{"no DATABASE_URL", "orders: DATABASE_URL is not set", nil},
		{"unreachable database", "orders: connect to database: ", []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none"}},
		{"bad APP_SLOW", `orders: APP_SLOW must be 0 or 1, got "maybe"`, []string{"DATABASE_URL=postgres://x@127.0.0.1:1/x", "APP_SLOW=maybe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin)
			cmd.Env = environ(append(tt.env, "PORT="+freePort(t))...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit: %v, want status 1; stderr %q", err, stderr.String())
			}
			out := stderr.String()
			if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") || !strings.HasPrefix(out, tt.wantErr) {
				t.Errorf("stderr = %q, want one line starting %q", out, tt.wantErr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}
