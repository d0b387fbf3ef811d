package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/internal/pgtest"
)

// replayBin is the replay binary, built once by TestMain.
var replayBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "replay-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	replayBin = filepath.Join(dir, "replay")
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		goCmd = "go"
	}
	if out, err := exec.Command(goCmd, "build", "-o", replayBin, "github.com/replaykit/replay/cmd/replay").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build replay: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// The schema every server serves: authors and books, books large enough
// that a sequential scan of it is slow next to an index scan.
const (
	authors   = 2000
	schemaSQL = `
CREATE TABLE authors (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE books (id serial PRIMARY KEY, author_id int NOT NULL REFERENCES authors (id), title text NOT NULL, year int NOT NULL);
INSERT INTO authors (name) SELECT 'author ' || i FROM generate_series(1, 2000) i;
INSERT INTO books (author_id, title, year) SELECT 1 + i % 2000, 'book ' || i, 1900 + i % 120 FROM generate_series(1, 300000) i;
CREATE INDEX books_author_id_idx ON books (author_id);
ANALYZE;
`
	// The candidate's database lacks this index: a database-only slowdown.
	dropIndexSQL = `DROP INDEX books_author_id_idx`
)

// logPrefix makes each log line name its database, so the test counts the
// statements of one database only.
const logPrefix = "%m [%p] db=%d app=%a: "

// stmtLine matches the first line of a logged statement: a simple query or
// the execution of an extended-protocol one.
var stmtLine = regexp.MustCompile(`db=(\S*) app=.*?: LOG:  (?:statement|execute [^:]*): `)

// cluster is a throwaway PostgreSQL server that logs every statement.
type cluster struct {
	*pgtest.Cluster
	log string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	if os.Getenv(pgtest.EnvURL) != "" {
		t.Skip("reads the server's own statement log: needs its own cluster, not " + pgtest.EnvURL)
	}
	c := pgtest.New(t, pgtest.Config{Settings: map[string]string{
		"log_statement":   "all",
		"log_line_prefix": logPrefix,
		"max_connections": "300",
	}})
	return &cluster{Cluster: c, log: filepath.Join(c.Dir, "postgres.log")}
}

// exec runs sql in database db.
func (c *cluster) exec(t *testing.T, db, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.URL(db)+"&application_name=e2e-setup")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", db, err)
	}
}

// bookDatabases creates database base with the schema and data, and cand, a
// copy of it without the index on books.author_id.
func (c *cluster) bookDatabases(t *testing.T, base, cand string) {
	t.Helper()
	c.exec(t, "postgres", "CREATE DATABASE "+base)
	c.exec(t, base, schemaSQL)
	c.exec(t, "postgres", "CREATE DATABASE "+cand+" TEMPLATE "+base)
	c.exec(t, cand, dropIndexSQL)
}

// offset is where the statement log ends now: the start of a window.
func (c *cluster) offset(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(c.log)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// count returns the statements logged for database db since offset from,
// per database when db is "".
func (c *cluster) count(t *testing.T, from int64, db string) int {
	t.Helper()
	time.Sleep(200 * time.Millisecond) // backends write their log lines as they finish
	f, err := os.Open(c.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if m := stmtLine.FindSubmatch(sc.Bytes()); m != nil && string(m[1]) == db {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// dbURL is the URL of database db with its address replaced by addr.
func (c *cluster) dbURL(db, addr string) string {
	return strings.Replace(c.URL(db), c.Addr(), addr, 1)
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a process the test started in its own process group.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs command with sh -c and the test's environment plus env; it is
// stopped when the test ends.
func start(t *testing.T, name, command string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(syscall.SIGTERM) })
	return p
}

// stop sends sig to the process group and waits, killing it after 10s.
func (p *proc) stop(sig syscall.Signal) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	return p.err
}

// waitHTTP waits until url answers HTTP at all, or p exits.
func waitHTTP(t *testing.T, p *proc, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("%s exited before it answered: %v\n%s", p.name, p.err, tail(p.out.String()))
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer %s in 60s\n%s", p.name, url, tail(p.out.String()))
}

// waitTCP waits until addr accepts connections.
func waitTCP(t *testing.T, p *proc, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %v\n%s", p.name, p.err, tail(p.out.String()))
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s does not listen on %s\n%s", p.name, addr, tail(p.out.String()))
}

func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}

// drive sends n requests of ep to base from workers concurrent clients and
// fails the test on any answer other than 2xx.
func drive(t *testing.T, base string, ep endpoint, n, workers int) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	next := make(chan int)
	var mu sync.Mutex
	var errs []string
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				method, path, body := ep.request(i)
				req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
				if body != nil {
					req.Header.Set("Content-Type", "application/json")
				}
				req.Header.Set("Accept", "application/json")
				resp, err := client.Do(req)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode/100 != 2 || bytes.Contains(b, []byte(`"errors"`)) {
						err = fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
					}
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Sprintf("%s %s: %v", method, path, err))
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	client.CloseIdleConnections()
	if len(errs) > 0 {
		t.Fatalf("%d of %d requests of %s failed, first: %s", len(errs), n, ep.name, errs[0])
	}
}

// within reports whether got is within 10% of truth.
func within(got, truth float64) bool {
	if truth == 0 {
		return got == 0
	}
	d := (got - truth) / truth
	return d >= -0.10 && d <= 0.10
}

func pct(got, truth float64) string {
	if truth == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(100*(got-truth)/truth, 'f', 1, 64) + "%"
}
