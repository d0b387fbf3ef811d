package snapshots

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary a writer that runs until it is killed
// (see TestMain and writeUntilKilled).
const childEnv = "REPLAY_SNAPSHOTS_TEST_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(writeUntilKilled(path))
	}
	os.Exit(m.Run())
}

// writeUntilKilled writes exchanges to a new snapshot at path at a steady
// pace, printing "added N" after every 20, until the process is killed. It
// also reads its own file, as another reader would, and prints "committed
// N" with the exchanges it finds there.
func writeUntilKilled(path string) int {
	w, err := Create(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	go func() {
		s, err := Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for {
			n, _, err := s.Counts(context.Background())
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			mu.Lock()
			fmt.Fprintf(out, "committed %d\n", n)
			out.Flush()
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	for i := 1; ; i++ {
		e := sampleExchange(i)
		e.RequestBody = bytes.Repeat([]byte{byte(i)}, 512) // checked after the kill
		e.RequestBodySize = 512
		w.CountSeen(e.Direction)
		w.AddExchange(e)
		if i%20 == 0 {
			mu.Lock()
			fmt.Fprintf(out, "added %d\n", i)
			out.Flush()
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // at most 1000 a second
		}
	}
}

// TestKilledWriter kills a writing process with SIGKILL and checks that the
// snapshot opens, is intact, and holds everything a reader saw committed
// before the kill and everything added more than a second (plus a margin for
// a loaded machine) before it. While the child writes, this process reads
// the file too.
func TestKilledWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), "killed.snap")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type progress struct {
		at    time.Time
		added int
	}
	var mu sync.Mutex
	var seen []progress
	committed := 0 // the most the child saw committed
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if c, ok := strings.CutPrefix(line, "committed "); ok {
				n, err := strconv.Atoi(c)
				mu.Lock()
				if err == nil && n > committed {
					committed = n
				}
				mu.Unlock()
				continue
			}
			n, err := strconv.Atoi(strings.TrimPrefix(line, "added "))
			if err == nil {
				mu.Lock()
				seen = append(seen, progress{time.Now(), n})
				mu.Unlock()
			}
		}
	}()

	// Read the file from here while the child writes it: wait (up to a
	// generous deadline) until committed exchanges are visible.
	deadline := time.Now().Add(30 * time.Second)
	var visible int64
	for visible == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no committed exchange visible after 30s; child stderr: %s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
		s, err := Open(path)
		if err != nil {
			continue // not created yet
		}
		visible, _, err = s.Counts(context.Background())
		s.Close()
		if err != nil {
			t.Fatalf("reading while the child writes: %v", err)
		}
	}
	time.Sleep(3 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	cmd.Wait()

	// Everything added 2.5 s before the kill had a second to be committed
	// and 1.5 s of slack for a machine shared with other work.
	mu.Lock()
	mustHave := 0
	for _, p := range seen {
		if p.at.Before(killed.Add(-2500 * time.Millisecond)) {
			mustHave = p.added
		}
	}
	total := seen[len(seen)-1].added
	sawCommitted := committed
	mu.Unlock()
	if mustHave == 0 {
		t.Fatalf("the child made no progress worth checking (added %d in all)", total)
	}

	s, err := Open(path)
	if err != nil {
		t.Fatalf("open after SIGKILL: %v", err)
	}
	defer s.Close()
	var n int64
	for e, err := range s.Exchanges(context.Background(), Filter{}) {
		if err != nil {
			t.Fatalf("read after SIGKILL: %v", err)
		}
		n++
		if e.ID != n {
			t.Fatalf("exchange %d where %d was expected: a gap", e.ID, n)
		}
		if want := bytes.Repeat([]byte{byte(e.ID)}, 512); !bytes.Equal(e.RequestBody, want) {
			t.Fatalf("exchange %d: body damaged", e.ID)
		}
	}
	if n < int64(mustHave) {
		t.Errorf("snapshot holds %d exchanges; %d were added more than 2.5s before the kill", n, mustHave)
	}
	if n < int64(sawCommitted) || sawCommitted == 0 {
		t.Errorf("snapshot holds %d exchanges; a reader saw %d committed before the kill", n, sawCommitted)
	}
	stats, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if stats.InboundRecorded+stats.OutboundRecorded != n {
		t.Errorf("capture stats say %d recorded, the file holds %d", stats.InboundRecorded+stats.OutboundRecorded, n)
	}
	var integrity string
	if err := s.db.QueryRow(`PRAGMA quick_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Errorf("quick_check = %q, %v", integrity, err)
	}
	t.Logf("child added %d, %d of them 2.5s before the kill, saw %d committed; the file holds %d", total, mustHave, sawCommitted, n)
}

// TestConcurrentWriters adds from 50 goroutines and checks nothing is lost,
// with a small batch size and queue so that producers wait on the writer.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "concurrent.snap")
	w, err := Create(path, Options{BatchSize: 64, FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 50, 40
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				// Reserve the ID at the start, add at completion: out of order.
				id := w.NewID()
				w.AddStatement(&Statement{ExchangeID: id, SQL: "SELECT 1"})
				e := sampleExchange(int(id))
				e.ID = id
				w.CountSeen(e.Direction)
				w.AddExchange(e)
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := map[int64]bool{}
	for e, err := range s.Exchanges(context.Background(), Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids[e.ID] = true
	}
	if len(ids) != goroutines*each {
		t.Errorf("file holds %d distinct exchanges, want %d", len(ids), goroutines*each)
	}
	for id := int64(1); id <= goroutines*each; id++ {
		if !ids[id] {
			t.Errorf("exchange %d missing", id)
			break
		}
	}
	ex, st, err := s.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ex != goroutines*each || st != goroutines*each {
		t.Errorf("counts = %d exchanges, %d statements; want %d each", ex, st, goroutines*each)
	}
	stats, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got := stats.InboundSeen + stats.OutboundSeen; got != goroutines*each {
		t.Errorf("seen = %d", got)
	}
	if stats.InboundSeen != stats.InboundRecorded || stats.OutboundSeen != stats.OutboundRecorded || stats.Statements != st {
		t.Errorf("capture stats %+v do not match the file", stats)
	}
	if w.Stats() != stats {
		t.Errorf("writer stats %+v, file %+v", w.Stats(), stats)
	}
}

// TestReadWhileWriting opens the snapshot while its Writer is still open and
// sees each commit.
func TestReadWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.snap")
	w, err := Create(path, Options{FlushInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("open while writing: %v", err)
	}
	defer s.Close()
	for round := 1; round <= 3; round++ {
		for i := 0; i < 10; i++ {
			w.AddExchange(sampleExchange(i + 1))
		}
		want := int64(round * 10)
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, _, err := s.Counts(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n == want {
				break
			}
			if n > want || time.Now().After(deadline) {
				t.Fatalf("round %d: reader sees %d exchanges, want %d", round, n, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// A second reader, opened now, sees the same.
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := len(collect(t, s2.Exchanges(context.Background(), Filter{}))); got != 30 {
		t.Errorf("second reader sees %d", got)
	}
}

// TestAddAfterClose must not panic.
func TestAddAfterClose(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "x.snap"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.AddExchange(sampleExchange(1))
	w.AddStatement(sampleStatement(1))
	if got := w.Stats(); got.InboundRecorded+got.OutboundRecorded != 0 {
		t.Errorf("stats count an exchange added after Close: %+v", got)
	}
}
