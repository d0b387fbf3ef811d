package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// failingAppSource is a build for --cmd that fails in one of these ways:
// with EXIT_AFTER=N it serves N requests, logs a last line and exits 3
// (with KILL=1 it kills itself with SIGKILL instead); with UPSTREAM=URL
// each request gets URL, through $HTTP_PROXY when set (loopback URLs too),
// with its own path in header X-Inbound-Path, and answers 502 unless it
// answers 200; with DB=1 each request opens a
// PostgreSQL connection through $REPLAY_SQLCOUNT_ADDR and answers 500 when
// the server refuses it; with DB=query it runs SELECT 1 there as user
// $DB_USER (trust authentication) and answers 500 when that fails.
const failingAppSource = `package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

var startupBody = []byte("\x00\x03\x00\x00user\x00u\x00database\x00db\x00\x00")

// client sends every call through $HTTP_PROXY: Go's default would leave
// loopback upstreams out.
var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
	Proxy: func(*http.Request) (*url.URL, error) {
		if p := os.Getenv("HTTP_PROXY"); p != "" {
			return url.Parse(p)
		}
		return nil, nil
	}}}

func main() {
	limit, _ := strconv.Atoi(os.Getenv("EXIT_AFTER"))
	var n atomic.Int64
	fmt.Println("app listening on", os.Getenv("PORT"))
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch os.Getenv("DB") {
		case "1":
			c, err := net.Dial("tcp", os.Getenv("REPLAY_SQLCOUNT_ADDR"))
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			defer c.Close()
			c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(startupBody)+4)), startupBody...))
			b := make([]byte, 1)
			if _, err := c.Read(b); err != nil || b[0] == 'E' {
				http.Error(w, "database: connection refused", 500)
				return
			}
		case "query":
			if err := selectOne(os.Getenv("REPLAY_SQLCOUNT_ADDR"), os.Getenv("DB_USER")); err != nil {
				fmt.Println("database error:", err)
				http.Error(w, "database: "+err.Error(), 500)
				return
			}
		}
		if u := os.Getenv("UPSTREAM"); u != "" {
			req, _ := http.NewRequest("GET", u, nil)
			req.Header.Set("X-Inbound-Path", r.URL.Path) // "/": replay's readiness check
			resp, err := client.Do(req)
			if err != nil {
				http.Error(w, err.Error(), 502)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				http.Error(w, "upstream: "+resp.Status, 502)
				return
			}
		}
		w.Write([]byte("ok"))
		if limit > 0 && n.Add(1) == int64(limit) {
			fmt.Println("fatal error: out of memory allocating order cache")
			if os.Getenv("KILL") == "1" {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			os.Exit(3)
		}
	})
	http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), nil)
}

// selectOne runs SELECT 1 on a new connection to addr.
func selectOne(addr, user string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	body := "\x00\x03\x00\x00user\x00" + user + "\x00database\x00postgres\x00\x00"
	c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body)+4)), body...))
	r := bufio.NewReader(c)
	if err := untilReady(r); err != nil {
		return err
	}
	q := "SELECT 1\x00"
	c.Write(append(append([]byte{'Q'}, binary.BigEndian.AppendUint32(nil, uint32(len(q)+4))...), q...))
	if err := untilReady(r); err != nil {
		return err
	}
	c.Write([]byte{'X', 0, 0, 0, 4})
	return nil
}

// untilReady reads messages up to ReadyForQuery; an ErrorResponse is an
// error with its message.
func untilReady(r *bufio.Reader) error {
	for {
		t, err := r.ReadByte()
		if err != nil {
			return err
		}
		var n uint32
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return err
		}
		b := make([]byte, n-4)
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		switch t {
		case 'E':
			for _, f := range strings.Split(string(b), "\x00") {
				if strings.HasPrefix(f, "M") {
					return errors.New(f[1:])
				}
			}
			return errors.New("error response")
		case 'Z':
			return nil
		}
	}
}
`

// buildFailingApp compiles failingAppSource and returns the binary.
func buildFailingApp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(failingAppSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "app")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build failing app: %v\n%s", err, out)
	}
	return bin
}

// TestRunBuildKilledMidRun: a build that exits after 5 of 60 requests
// fails the run without goals (exit 99), and the report names the exited
// build with the last line of its log.
func TestRunBuildKilledMidRun(t *testing.T) {
	bin := buildFailingApp(t)
	snap := runSnapshot(t, "GET /a", "GET /b", "GET /c")
	out := filepath.Join(t.TempDir(), "r.run")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--out", out, "--cmd", bin, "--env", "EXIT_AFTER=5",
		"--explain", "0", "--iterations", "20")
	if code != exitRegression {
		t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", code, exitRegression, stdout, stderr)
	}
	if !regexp.MustCompile(`\n  the build exited ×5[5-9] `).MatchString(stdout) {
		t.Errorf("stdout does not name the build exiting as the main cause:\n%s", stdout)
	}
	for _, want := range []string{
		"Result: FAILED · success rate ",
		"of requests failed (at most 1% may)",
		"(exited with status 3)",
		"| fatal error: out of memory allocating order cache",
		"build log: " + out + ".build.log",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = replayRun(t, "--snapshot", snap, "--out", out+"2", "--cmd", bin, "--env", "EXIT_AFTER=5",
		"--explain", "0", "--iterations", "20", "--format", "json")
	if code != exitRegression || !strings.Contains(stdout, `"kind": "the build exited"`) ||
		!strings.Contains(stdout, `"fatal error: out of memory allocating order cache"`) || !strings.Contains(stdout, `"max_failed": 0.01`) {
		t.Errorf("JSON: exit %d\n%s", code, stdout)
	}
}

// TestRunDatabaseRefuses: a build whose database refuses connections (the
// SQL counter's upstream has nothing listening) fails, and the report
// names the 5xx answers and the connections the counter could not open.
func TestRunDatabaseRefuses(t *testing.T) {
	bin := buildFailingApp(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	snap := runSnapshot(t, "GET /a", "GET /b")
	out := filepath.Join(t.TempDir(), "r.run")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--out", out, "--cmd", bin, "--env", "DB=1",
		"--postgres", "127.0.0.1:0="+dead, "--explain", "0", "--iterations", "5")
	if code != exitRegression {
		t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", code, exitRegression, stdout, stderr)
	}
	for _, want := range []string{
		"5xx answers ×10 (500 Internal Server Error ×10)",
		"database unreachable: the SQL counter could not connect to the database ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// TestRunMaxFailed: one failed request in 200 (0.5%) passes under the
// default --max-failed 1% and fails under --max-failed 0, which names the
// 5xx answer.
func TestRunMaxFailed(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			http.Error(w, "boom", http.StatusServiceUnavailable)
			return
		}
		n.Add(1)
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	reqs := make([]string, 0, 200)
	for i := range 199 {
		reqs = append(reqs, "GET /ok/"+strconv.Itoa(i))
	}
	snap := runSnapshot(t, append(reqs, "GET /bad")...)
	dir := t.TempDir()
	for i, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 0, "Result: PASSED · success rate 99.5% (1 of 200 failed)\n"},
		{[]string{"--max-failed", "0.5%"}, 0, "Result: PASSED"},
		{[]string{"--max-failed", "0"}, exitRegression, "Result: FAILED · success rate 99.5% (1 of 200 failed) · 0.5% of requests failed (at most 0% may)"},
		{[]string{"--max-failed", "0.001"}, exitRegression, "5xx answers ×1 (503 Service Unavailable ×1)"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"--snapshot", snap, "--out", filepath.Join(dir, strconv.Itoa(i)+".run"), "--target", srv.URL,
				"--explain", "0", "--iterations", "1"}, tc.args...)
			code, stdout, stderr := replayRun(t, args...)
			if code != tc.code || !strings.Contains(stdout, tc.want) {
				t.Errorf("exit %d (want %d), stdout lacks %q:\n%s\nstderr:\n%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
	if code, _, stderr := replayRun(t, "--snapshot", snap, "--out", filepath.Join(dir, "x.run"), "--target", srv.URL, "--max-failed", "5"); code != exitUsage ||
		!strings.Contains(stderr, "--max-failed") {
		t.Errorf("--max-failed 5: exit %d, stderr %q", code, stderr)
	}
}

// TestRunMockMisses: a build whose upstream calls the mock has no answer
// for fails, and the report names the 502 answers and the mock's misses.
func TestRunMockMisses(t *testing.T) {
	bin := buildFailingApp(t)
	snap := mockSnapshot(t) // records plain.test:8080/ping and an inbound GET /x
	out := filepath.Join(t.TempDir(), "r.run")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--out", out, "--cmd", bin, "--env", "UPSTREAM=http://plain.test:8080/gone",
		"--mock", "plain.test:8080", "--ca-dir", filepath.Join(t.TempDir(), "ca"), "--explain", "0", "--iterations", "4")
	if code != exitRegression {
		t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", code, exitRegression, stdout, stderr)
	}
	for _, want := range []string{
		"5xx answers ×4 (502 Bad Gateway ×4)",
		"mock misses: ", // the build's readiness check may call upstream too
		" upstream calls the snapshot has no answer for",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}
