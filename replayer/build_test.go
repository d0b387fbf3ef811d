package replayer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestMain doubles as a tiny app for the build tests: with
// REPLAYER_TEST_HELPER set, the test binary serves HTTP on $PORT instead of
// running tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("REPLAYER_TEST_HELPER"); mode != "" {
		os.Exit(helperApp(mode))
	}
	os.Exit(m.Run())
}

func helperApp(mode string) int {
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	fmt.Println("helper app starting on port", os.Getenv("PORT"))
	l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(os.Environ())
	})
	mux.HandleFunc("/pid", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, os.Getpid())
	})
	http.Serve(l, mux)
	return 0
}

func helperBuild(t *testing.T, mode string) Build {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Build{
		Cmd:       fmt.Sprintf("exec %q -test.run=^$", exe),
		Env:       []string{"REPLAYER_TEST_HELPER=" + mode, "DATABASE_URL=postgres://app@127.0.0.1:5432/orders?sslmode=disable", "CATALOG_DB=host=127.0.0.1:5432"},
		LogPath:   filepath.Join(t.TempDir(), "build.log"),
		StopGrace: 500 * time.Millisecond,
	}
}

func getString(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// gone reports whether process pid has ended (a zombie waiting for a reaper
// counts as ended).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after Stop", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartBuildWiresEnvironmentAndStops(t *testing.T) {
	b := helperBuild(t, "serve")
	w := Wiring{Proxy: "127.0.0.1:4000", CABundle: "/ca/bundle.pem", CACert: "/ca/ca.pem", Databases: []DatabaseRoute{{Protocol: PostgreSQL, Upstream: "127.0.0.1:5432", Counter: "127.0.0.1:6543"}}}
	p, err := StartBuild(context.Background(), b, w)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var env []string
	if err := json.Unmarshal([]byte(getString(t, p.URL()+"/env")), &env); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	want := map[string]string{
		"PORT":                 strconv.Itoa(p.Port()),
		"HTTP_PROXY":           "http://127.0.0.1:4000",
		"HTTPS_PROXY":          "http://127.0.0.1:4000",
		"https_proxy":          "http://127.0.0.1:4000",
		"NO_PROXY":             "localhost,127.0.0.1,::1",
		"SSL_CERT_FILE":        "/ca/bundle.pem",
		"REQUESTS_CA_BUNDLE":   "/ca/bundle.pem",
		"NODE_EXTRA_CA_CERTS":  "/ca/ca.pem",
		"DATABASE_URL":         "postgres://app@127.0.0.1:6543/orders?sslmode=disable",
		"CATALOG_DB":           "host=127.0.0.1:6543",
		"REPLAY_SQLCOUNT_ADDR": "127.0.0.1:6543",
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			got[k] = "(unset)"
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			delete(got, k)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("build environment (-want +got):\n%s", diff)
	}
	pid, _ := strconv.Atoi(getString(t, p.URL()+"/pid"))
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	waitGone(t, pid)
	log, err := os.ReadFile(b.LogPath)
	if err != nil || !strings.Contains(string(log), "helper app starting on port "+strconv.Itoa(p.Port())) {
		t.Errorf("build log %q, %v; want the app's output", log, err)
	}
}

func TestStartBuildThatExitsEarly(t *testing.T) {
	b := Build{Cmd: "echo starting; echo 'fatal: cannot connect to database' >&2; exit 1"}
	_, err := StartBuild(context.Background(), b, Wiring{})
	if err == nil {
		t.Fatal("StartBuild succeeded for a build that exits")
	}
	want := `build "echo starting; echo 'fatal: cannot connect to database' >&2; exit 1" exited with status 1 before answering on port `
	if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), ": fatal: cannot connect to database") {
		t.Errorf("err = %q\nwant %q…: fatal: cannot connect to database", err, want)
	}
}

func TestStartBuildThatNeverListens(t *testing.T) {
	b := Build{Cmd: "echo 'listening on :9999 (ignoring PORT)'; sleep 30", StartTimeout: 300 * time.Millisecond, StopGrace: 200 * time.Millisecond}
	start := time.Now()
	_, err := StartBuild(context.Background(), b, Wiring{})
	if err == nil || !strings.Contains(err.Error(), "did not answer HTTP on port") || !strings.Contains(err.Error(), "listening on :9999 (ignoring PORT)") {
		t.Errorf("err = %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("StartBuild took %s; the sleeping build was not stopped", time.Since(start))
	}
}

func TestStopKillsAStubbornBuild(t *testing.T) {
	b := helperBuild(t, "stubborn")
	p, err := StartBuild(context.Background(), b, Wiring{})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(getString(t, p.URL()+"/pid"))
	p.Stop()
	waitGone(t, pid)
}

func TestStopReportsABuildThatCrashed(t *testing.T) {
	b := helperBuild(t, "serve")
	p, err := StartBuild(context.Background(), b, Wiring{})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(getString(t, p.URL()+"/pid"))
	syscall.Kill(pid, syscall.SIGKILL)
	<-p.Exited()
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "while replay was running") {
		t.Errorf("Stop after a crash: %v", err)
	}
}

func TestWiringEnviron(t *testing.T) {
	base := []string{"HOME=/root", "DATABASE_URL=postgres://u@db:5432/x", "PGHOST=db", "PGPORT=5432", "HTTP_PROXY=http://corp:3128"}
	tests := []struct {
		name  string
		w     Wiring
		extra []string
		want  []string
	}{
		{
			name: "nothing to wire",
			want: []string{"HOME=/root", "DATABASE_URL=postgres://u@db:5432/x", "PGHOST=db", "PGPORT=5432", "HTTP_PROXY=http://corp:3128", "PORT=8081"},
		},
		{
			name:  "extra overrides base",
			extra: []string{"HOME=/app", "APP_SLOW=1"},
			want:  []string{"HOME=/app", "DATABASE_URL=postgres://u@db:5432/x", "PGHOST=db", "PGPORT=5432", "HTTP_PROXY=http://corp:3128", "APP_SLOW=1", "PORT=8081"},
		},
		{
			name: "database rewritten",
			w:    Wiring{Databases: []DatabaseRoute{{Protocol: PostgreSQL, Upstream: "db:5432", Counter: "127.0.0.1:7000"}}},
			want: []string{"HOME=/root", "DATABASE_URL=postgres://u@127.0.0.1:7000/x", "PGHOST=127.0.0.1", "PGPORT=7000", "HTTP_PROXY=http://corp:3128", "PORT=8081", "REPLAY_SQLCOUNT_ADDR=127.0.0.1:7000"},
		},
		{
			name:  "another spelling of the server is rewritten (localhost for 127.0.0.1)",
			w:     Wiring{Databases: []DatabaseRoute{{Protocol: PostgreSQL, Upstream: "127.0.0.1:5432", Counter: "127.0.0.1:7000"}}},
			extra: []string{"DB=postgres://localhost:5432/x"},
			want:  []string{"HOME=/root", "DATABASE_URL=postgres://u@db:5432/x", "PGHOST=db", "PGPORT=5432", "HTTP_PROXY=http://corp:3128", "DB=postgres://127.0.0.1:7000/x", "PORT=8081", "REPLAY_SQLCOUNT_ADDR=127.0.0.1:7000"},
		},
		{
			name:  "LISTEN, the address record taught, goes to this side's counter",
			w:     Wiring{Databases: []DatabaseRoute{{Protocol: PostgreSQL, Upstream: "db:5432", Counter: "127.0.0.1:6544", Listen: "127.0.0.1:6543", App: "replay-candidate"}}},
			extra: []string{"DATABASE_URL=postgres://u@127.0.0.1:6543/x", "PGHOST=127.0.0.1", "PGPORT=6543", "OTHER=127.0.0.1:65430"},
			want: []string{"HOME=/root", "DATABASE_URL=postgres://u@127.0.0.1:6544/x", "PGHOST=127.0.0.1", "PGPORT=6544", "HTTP_PROXY=http://corp:3128", "OTHER=127.0.0.1:65430",
				"PORT=8081", "REPLAY_SQLCOUNT_ADDR=127.0.0.1:6544", "PGAPPNAME=replay-candidate"},
		},
		{
			name:  "the counter at LISTEN itself: unchanged; PGAPPNAME given wins",
			w:     Wiring{Databases: []DatabaseRoute{{Protocol: PostgreSQL, Upstream: "db:5432", Counter: "127.0.0.1:6543", Listen: "127.0.0.1:6543", App: "replay-baseline"}}},
			extra: []string{"DATABASE_URL=postgres://u@127.0.0.1:6543/x", "PGAPPNAME=orders"},
			want: []string{"HOME=/root", "DATABASE_URL=postgres://u@127.0.0.1:6543/x", "PGHOST=127.0.0.1", "PGPORT=6543", "HTTP_PROXY=http://corp:3128", "PGAPPNAME=orders",
				"PORT=8081", "REPLAY_SQLCOUNT_ADDR=127.0.0.1:6543"},
		},
		{
			name: "proxy replaces the corporate one",
			w:    Wiring{Proxy: "127.0.0.1:9000"},
			want: []string{"HOME=/root", "DATABASE_URL=postgres://u@db:5432/x", "PGHOST=db", "PGPORT=5432", "HTTP_PROXY=http://127.0.0.1:9000", "PORT=8081",
				"HTTPS_PROXY=http://127.0.0.1:9000", "http_proxy=http://127.0.0.1:9000", "https_proxy=http://127.0.0.1:9000", "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.w.Environ(base, tt.extra, 8081)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Environ (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExitText: how a build's command ended, in the words of the reports;
// a status above 128 is the shell's for a command a signal killed.
func TestExitText(t *testing.T) {
	for script, want := range map[string]string{
		"exit 3":     "exited with status 3",
		"exit 137":   "exited with status 137: killed by signal 9 (killed)",
		"kill -9 $$": "was killed by signal 9 (killed)",
		"true":       "exited with status 0",
	} {
		err := exec.Command("/bin/sh", "-c", script).Run()
		if got := exitText(err); got != want {
			t.Errorf("%s: %q; want %q", script, got, want)
		}
	}
}
