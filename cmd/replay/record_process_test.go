package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/snapshots"
)

// buildReplay builds the command into a directory removed when t ends.
func buildReplay(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "replay")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// recordProcess is `replay record` running as a child process.
type recordProcess struct {
	cmd    *exec.Cmd
	stdout syncbuf.Buffer
	stderr syncbuf.Buffer
	addr   string // the first inbound listen address
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// startRecordProcess runs `replay record args...` and waits until it listens.
func startRecordProcess(t *testing.T, bin string, args ...string) *recordProcess {
	t.Helper()
	p := &recordProcess{cmd: exec.Command(bin, append([]string{"record"}, args...)...), exited: make(chan struct{})}
	pr, pw := io.Pipe()
	p.cmd.Stdout = io.MultiWriter(&p.stdout, pw)
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		first := ""
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "inbound" && first == "" {
				first = f[1]
			}
			if strings.HasPrefix(sc.Text(), "recording to ") {
				addr <- first
				break
			}
		}
		close(addr)
		io.Copy(io.Discard, pr)
	}()
	select {
	case a, ok := <-addr:
		if !ok || a == "" {
			t.Fatalf("no inbound address printed:\n%s", p.stdout.String())
		}
		p.addr = a
	case <-p.exited:
		t.Fatalf("record exited: %v\nstdout:\n%s\nstderr:\n%s", p.err, p.stdout.String(), p.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("record did not start within 60s:\n%s", p.stdout.String())
	}
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *recordProcess) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("record still running after %v; stderr:\n%s", within, p.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

func readSnapshot(t *testing.T, path string) []*snapshots.Exchange {
	t.Helper()
	snap, err := snapshots.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	var all []*snapshots.Exchange
	for e, err := range snap.Exchanges(context.Background(), snapshots.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	return all
}

func echoServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRecordCommand(t *testing.T) {
	bin := buildReplay(t)

	t.Run("SIGINT flushes and summarises", func(t *testing.T) {
		t.Parallel()
		app := echoServer(t)
		out := filepath.Join(t.TempDir(), "int.snap")
		p := startRecordProcess(t, bin, "--out", out, "--inbound", "127.0.0.1:0="+app.URL, "--endpoint", "GET /orders/{id}/status")
		targets := []string{"/orders/%d", "/orders/%d/status", "/catalog?page=%d"}
		const each = 50
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		var wg sync.WaitGroup
		for _, tpl := range targets {
			wg.Go(func() {
				for i := range each {
					res, err := client.Get("http://" + p.addr + fmt.Sprintf(tpl, i+1))
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			})
		}
		wg.Wait()
		client.CloseIdleConnections()
		p.cmd.Process.Signal(syscall.SIGINT)
		if code := p.wait(t, 60*time.Second); code != 0 {
			t.Fatalf("exit code %d; stderr:\n%s", code, p.stderr.String())
		}
		stdout := p.stdout.String()
		for _, want := range []string{
			"recorded 150 exchanges and 0 SQL statements to " + out,
			"capture: inbound 150 seen, 150 recorded",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("summary lacks %q:\n%s", want, stdout)
			}
		}
		for _, ep := range []string{"/orders/{id}", "/orders/{id}/status", "/catalog"} {
			if !hasRow(stdout, "inbound", p.addr, "GET", ep, "50") {
				t.Errorf("summary lacks GET %s with 50 exchanges:\n%s", ep, stdout)
			}
		}
		if all := readSnapshot(t, out); len(all) != len(targets)*each {
			t.Errorf("%d exchanges in the snapshot; want %d", len(all), len(targets)*each)
		}
	})

	t.Run("SIGKILL keeps what was committed", func(t *testing.T) {
		t.Parallel()
		app := echoServer(t)
		out := filepath.Join(t.TempDir(), "kill.snap")
		p := startRecordProcess(t, bin, "--out", out, "--inbound", "127.0.0.1:0="+app.URL)
		// Steady traffic; each client notes when each of its requests ended.
		var mu sync.Mutex
		ended := map[string]time.Time{}
		stopTraffic := make(chan struct{})
		var wg sync.WaitGroup
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 10 * time.Second}
		for c := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stopTraffic:
						return
					default:
					}
					path := fmt.Sprintf("/items/%d-%d", c, i)
					res, err := client.Get("http://" + p.addr + path)
					if err != nil {
						return // the recorder was killed
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					mu.Lock()
					ended[path] = time.Now()
					mu.Unlock()
					time.Sleep(2 * time.Millisecond)
				}
			})
		}
		time.Sleep(4 * time.Second)
		killed := time.Now()
		p.cmd.Process.Kill()
		p.wait(t, 30*time.Second)
		close(stopTraffic)
		wg.Wait()

		recorded := map[string]bool{}
		for _, e := range readSnapshot(t, out) {
			recorded[strings.TrimPrefix(e.URL, "http://"+p.addr)] = true
		}
		var old, missing int
		for path, at := range ended {
			if killed.Sub(at) > 1500*time.Millisecond {
				old++
				if !recorded[path] {
					missing++
				}
			}
		}
		if old == 0 {
			t.Fatalf("no request ended more than 1.5s before the kill (of %d)", len(ended))
		}
		if missing > 0 {
			t.Errorf("%d of the %d requests that ended more than 1.5s before the kill are missing (%d recorded)", missing, old, len(recorded))
		}
	})

	t.Run("second signal quits at once", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		defer close(release)
		arrived := make(chan struct{}, 1)
		app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				arrived <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
		}))
		defer app.Close()
		out := filepath.Join(t.TempDir(), "twice.snap")
		p := startRecordProcess(t, bin, "--out", out, "--inbound", "127.0.0.1:0="+app.URL, "--stop-timeout", "5m")
		for range 3 {
			res, err := http.Get("http://" + p.addr + "/fast")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		}
		go func() {
			if res, err := http.Get("http://" + p.addr + "/slow"); err == nil {
				res.Body.Close()
			}
		}()
		<-arrived
		p.cmd.Process.Signal(syscall.SIGINT)
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(p.stderr.String(), "stopping:") {
			if time.Now().After(deadline) {
				t.Fatalf("no stopping message after SIGINT; stderr:\n%s", p.stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		// The first signal waits for /slow (up to 5 minutes); the second
		// must not.
		p.cmd.Process.Signal(syscall.SIGTERM)
		if code := p.wait(t, 30*time.Second); code != 1 {
			t.Errorf("exit code %d; want 1", code)
		}
		if msg := p.stderr.String(); !strings.Contains(msg, "second signal") {
			t.Errorf("stderr does not explain the stop:\n%s", msg)
		}
		if all := readSnapshot(t, out); len(all) > 3 {
			t.Errorf("%d exchanges; want at most the 3 finished ones", len(all))
		}
	})
}

// TestRecordNothing: a recording stopped before any traffic keeps its
// (empty) snapshot and exits 0, with a warning that it holds no exchange.
func TestRecordNothing(t *testing.T) {
	bin := buildReplay(t)
	out := filepath.Join(t.TempDir(), "empty.snap")
	p := startRecordProcess(t, bin, "--out", out, "--inbound", "127.0.0.1:0="+echoServer(t).URL)
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, p.stderr.String())
	}
	if want := "replay: warning: the snapshot " + out + " holds 0 exchanges"; !strings.Contains(p.stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, p.stderr.String())
	}
	if !strings.Contains(p.stdout.String(), "recorded 0 exchanges and 0 SQL statements to "+out) {
		t.Errorf("no summary:\n%s", p.stdout.String())
	}
	if got := readSnapshot(t, out); len(got) != 0 {
		t.Errorf("the snapshot holds %d exchanges", len(got))
	}
}
