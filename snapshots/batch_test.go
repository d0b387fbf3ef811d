package snapshots

import (
	"database/sql"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBatcherCloseWhileFull closes a batcher while producers wait for room
// in its queue: each record added is written exactly once, in the order of
// each producer, and none after Close.
func TestBatcherCloseWhileFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil { // an empty database
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type rec struct{ producer, n int }
	var written []rec
	var transactions atomic.Int64
	b := batcher[rec]{
		db:       db,
		size:     4,
		interval: time.Millisecond,
		write: func(_ *stmts, chunk []rec) {
			if len(chunk) > 4 {
				t.Errorf("chunk of %d records, more than the batch size", len(chunk))
			}
			written = append(written, chunk...)
			time.Sleep(100 * time.Microsecond) // producers fill the queue meanwhile
		},
		beforeCommit: func(*stmts) error { transactions.Add(1); return nil },
	}
	b.start()
	const producers, each = 16, 100
	accepted := make([][]int, producers)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range each {
				if b.add(rec{p, n}) {
					accepted[p] = append(accepted[p], n)
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := b.close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if b.add(rec{-1, -1}) {
		t.Errorf("add after close reported success")
	}
	got := make([][]int, producers)
	for _, r := range written {
		got[r.producer] = append(got[r.producer], r.n)
	}
	total := 0
	for p := range producers {
		total += len(accepted[p])
		if len(got[p]) != len(accepted[p]) {
			t.Errorf("producer %d: %d records accepted, %d written", p, len(accepted[p]), len(got[p]))
			continue
		}
		for i := range got[p] {
			if got[p][i] != accepted[p][i] {
				t.Errorf("producer %d: record %d written as %d", p, accepted[p][i], got[p][i])
				break
			}
		}
	}
	t.Logf("%d of %d records accepted before close", total, producers*each)
	if transactions.Load() < int64(total/4) {
		t.Errorf("%d transactions for %d records of at most 4", transactions.Load(), total)
	}
}
