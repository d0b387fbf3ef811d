package snapshots

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Defaults of Options.
const (
	defaultFlushInterval = time.Second
	defaultBatchSize     = 10000
)

// record is one row (or a few) the batcher writes inside a transaction.
type record interface {
	// write inserts the record with the transaction's prepared statements.
	write(st *stmts) error
}

// stmts holds a transaction's prepared statements, by name.
type stmts struct {
	tx *sql.Tx
	m  map[string]*sql.Stmt
}

// exec runs the prepared statement name with args.
func (s *stmts) exec(name string, args ...any) error {
	_, err := s.m[name].Exec(args...)
	return err
}

// batcher writes records to a database on its own goroutine, in
// transactions of at most size records, each committed at most interval
// after its first record arrived. Producers never block on the disk unless
// the queue is full; then they wait rather than lose a record.
type batcher struct {
	db       *sql.DB
	queries  map[string]string // prepared once per transaction
	interval time.Duration
	size     int
	logger   *slog.Logger
	// beforeCommit runs inside each transaction, after its records (e.g. to
	// store counters); nil skips.
	beforeCommit func(st *stmts) error

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool
	queue  chan record
	done   chan struct{}
	err    error // first error; read after done is closed
}

// start launches the writing goroutine.
func (b *batcher) start() {
	if b.interval <= 0 {
		b.interval = defaultFlushInterval
	}
	if b.size <= 0 {
		b.size = defaultBatchSize
	}
	if b.logger == nil {
		b.logger = slog.New(slog.DiscardHandler)
	}
	b.queue = make(chan record, b.size)
	b.done = make(chan struct{})
	go b.loop()
}

// add queues r; it blocks only while the queue is full. It reports false
// when the batcher is closed.
func (b *batcher) add(r record) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return false
	}
	b.queue <- r
	return true
}

// close stops accepting records, writes those queued and returns the first
// error met while writing.
func (b *batcher) close() error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.queue)
	}
	b.mu.Unlock()
	<-b.done
	return b.err
}

func (b *batcher) fail(err error) {
	b.logger.Error("snapshot write", "err", err)
	if b.err == nil {
		b.err = err
	}
}

// loop runs on its own goroutine until the queue is closed and drained.
func (b *batcher) loop() {
	defer close(b.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		// Wait for the first record of the next transaction.
		r, ok := <-b.queue
		if !ok {
			b.commitEmpty()
			return
		}
		st, err := b.begin()
		if err != nil {
			b.fail(err)
			// Nothing can be written; keep draining so producers never hang.
			for range b.queue {
			}
			return
		}
		b.writeOne(st, r)
		n := 1
		timer.Reset(b.interval)
		open := true
	fill:
		for n < b.size {
			select {
			case r, open = <-b.queue:
				if !open {
					break fill
				}
				b.writeOne(st, r)
				n++
			case <-timer.C:
				break fill
			}
		}
		timer.Stop()
		if err := b.commit(st); err != nil {
			b.fail(err)
		}
		if !open {
			return
		}
	}
}

// commitEmpty runs beforeCommit once more so the final counters are stored
// even when the last records were committed before they changed.
func (b *batcher) commitEmpty() {
	if b.beforeCommit == nil {
		return
	}
	st, err := b.begin()
	if err != nil {
		b.fail(err)
		return
	}
	if err := b.commit(st); err != nil {
		b.fail(err)
	}
}

func (b *batcher) writeOne(st *stmts, r record) {
	if err := r.write(st); err != nil {
		b.fail(err)
	}
}

func (b *batcher) begin() (*stmts, error) {
	tx, err := b.db.BeginTx(context.Background(), nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	st := &stmts{tx: tx, m: make(map[string]*sql.Stmt, len(b.queries))}
	for name, q := range b.queries {
		s, err := tx.Prepare(q)
		if err != nil {
			tx.Rollback()
			return nil, fmt.Errorf("prepare %s: %w", name, err)
		}
		st.m[name] = s
	}
	return st, nil
}

func (b *batcher) commit(st *stmts) error {
	var errs []error
	if b.beforeCommit != nil {
		if err := b.beforeCommit(st); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range st.m {
		s.Close()
	}
	if err := st.tx.Commit(); err != nil {
		errs = append(errs, fmt.Errorf("commit: %w", err))
	}
	return errors.Join(errs...)
}
