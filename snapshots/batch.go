package snapshots

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Defaults of Options.
const (
	defaultFlushInterval = time.Second
	defaultBatchSize     = 10000
)

// wakeAfter is how many waiting records wake the writing goroutine before
// its transaction's deadline: it sleeps while fewer wait, so that a steady
// trickle of records costs no wake-up (a futex call) per record.
const wakeAfter = 256

// stmts holds the writer's prepared statements, by name. They run on the
// driver's connection directly: database/sql's bookkeeping per call costs
// more than a fifth of an insert, and one goroutine owns the connection.
type stmts struct {
	ctx  context.Context
	m    map[string]preparedStmt
	args []driver.NamedValue // reused by each exec
}

// preparedStmt is what the sqlite driver's statements do.
type preparedStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// exec runs the prepared statement name with args (int, int64, bool, string,
// []byte or nil).
func (s *stmts) exec(name string, args ...any) error {
	s.args = s.args[:0]
	for i, a := range args {
		if n, ok := a.(int); ok {
			a = int64(n)
		}
		s.args = append(s.args, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	return s.execArgs(name, s.args)
}

// execArgs runs the prepared statement name with args as they are: their
// Ordinals must run from 1.
func (s *stmts) execArgs(name string, args []driver.NamedValue) error {
	_, err := s.m[name].ExecContext(s.ctx, args)
	return err
}

// queryRow runs the prepared query name with args (as exec's) and returns
// the values of its first row, or nil when it has none.
func (s *stmts) queryRow(name string, args ...any) ([]driver.Value, error) {
	s.args = s.args[:0]
	for i, a := range args {
		if n, ok := a.(int); ok {
			a = int64(n)
		}
		s.args = append(s.args, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	rows, err := s.m[name].QueryContext(s.ctx, s.args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(dest); err != nil {
		if err == io.EOF {
			return nil, nil
		}
		return nil, err
	}
	return dest, nil
}

// testCommit, when set (by tests, before any batcher starts), commits in
// place of tx.Commit: a test makes a commit fail with it.
var testCommit func(tx driver.Tx) error

// batcher writes records of type T to a database on its own goroutine, in
// transactions of at most size records, each committed at most interval
// after it began (that is, after its first record arrived). Producers never
// block on the disk unless size records are already waiting; then they
// wait rather than lose a record.
//
// Records wait in a slice guarded by a mutex, which the writing goroutine
// swaps for an empty one: a record costs its producer an append, and the
// writer a wake-up per wakeAfter records at most.
type batcher[T any] struct {
	db *sql.DB
	// path, when set, is the file db writes: a second connection
	// checkpoints its WAL into it in the background (see checkpoints).
	path     string
	queries  map[string]string // prepared once, by name
	interval time.Duration
	size     int
	logger   *slog.Logger
	// write writes chunk (at most size records, in the order they were
	// added) inside the open transaction, reporting failures through fail.
	write func(st *stmts, chunk []T)
	// beforeCommit runs inside each transaction, after its records (e.g. to
	// store counters); nil skips.
	beforeCommit func(st *stmts) error
	// afterCommit runs after each commit with its error (nil when it
	// succeeded); nil skips.
	afterCommit func(err error)

	mu      sync.Mutex
	space   sync.Cond // signalled when records leave pending
	pending []T
	waiting int  // producers waiting for space
	idle    bool // the writer waits for a first record
	closed  bool
	dead    bool // the writer stopped on an error: records are dropped
	wake    chan struct{}

	spare []T // an empty slice to swap for pending; the writer's

	done     chan struct{}
	err      error // first error; read after done is closed
	failures int

	stopCheckpoints, checkpointsDone chan struct{}
}

// start launches the writing goroutine.
func (b *batcher[T]) start() {
	if b.interval <= 0 {
		b.interval = defaultFlushInterval
	}
	if b.size <= 0 {
		b.size = defaultBatchSize
	}
	if b.logger == nil {
		b.logger = slog.New(slog.DiscardHandler)
	}
	b.space.L = &b.mu
	b.wake = make(chan struct{}, 1)
	b.done = make(chan struct{})
	b.stopCheckpoints = make(chan struct{})
	b.checkpointsDone = make(chan struct{})
	go b.run()
	go b.checkpoints()
}

// checkpoints copies the WAL into the database file every
// checkpointInterval from a connection of its own, so that the writing
// goroutine never stops to do it (its connection does not checkpoint).
// PASSIVE checkpoints never wait for, nor block, the writer or readers.
func (b *batcher[T]) checkpoints() {
	defer close(b.checkpointsDone)
	if b.path == "" {
		return
	}
	db, err := sql.Open("sqlite", dsn(b.path, false))
	if err != nil {
		return // the writer's own checkpoints take over
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tick := time.NewTicker(checkpointInterval)
	defer tick.Stop()
	for {
		select {
		case <-b.stopCheckpoints:
			return
		case <-tick.C:
			db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
		}
	}
}

// checkpointInterval is how often the WAL is copied into the database.
const checkpointInterval = 500 * time.Millisecond

// run holds the database's one connection and writes until the batcher is
// closed and every record is written.
func (b *batcher[T]) run() {
	defer close(b.done)
	ctx := context.Background()
	conn, err := b.db.Conn(ctx)
	if err == nil {
		err = conn.Raw(func(dc any) error { return b.loop(ctx, dc) })
		if cerr := conn.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		b.fail(err)
		// Nothing can be written; never leave producers hanging.
		b.mu.Lock()
		b.dead = true
		clear(b.pending)
		b.pending = b.pending[:0]
		b.space.Broadcast()
		b.mu.Unlock()
	}
}

// add queues v; it blocks only while size records are waiting. It reports
// false when the batcher is closed.
func (b *batcher[T]) add(v T) bool {
	return b.addFunc(func() T { return v })
}

// addFunc queues the record mk returns, calling it under the batcher's
// lock once there is room: records are queued in the order they were
// made.
func (b *batcher[T]) addFunc(mk func() T) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	for len(b.pending) >= b.size && !b.dead {
		// Once waiting, the record goes in even if close comes meanwhile:
		// close waits for it.
		b.waiting++
		b.space.Wait()
		b.waiting--
	}
	if b.dead {
		b.mu.Unlock()
		return true // the error is close's to report
	}
	b.pending = append(b.pending, mk())
	signal := b.idle || b.closed || len(b.pending) == wakeAfter || len(b.pending) == b.size
	if signal {
		b.idle = false
	}
	b.mu.Unlock()
	if signal {
		b.signal()
	}
	return true
}

// signal wakes the writing goroutine, or leaves it a token to find.
func (b *batcher[T]) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// close stops accepting records, writes those queued and returns the first
// error met while writing.
func (b *batcher[T]) close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.signal()
	<-b.done
	close(b.stopCheckpoints)
	<-b.checkpointsDone
	return b.err
}

// fail records a write error: the first is returned by close, the first few
// are logged as they happen (a full disk fails every insert).
func (b *batcher[T]) fail(err error) {
	b.failures++
	if b.failures <= maxLoggedFailures {
		b.logger.Error("snapshot write", "err", err)
	}
	if b.err == nil {
		b.err = err
	}
}

// maxLoggedFailures bounds how many write errors a batcher logs.
const maxLoggedFailures = 10

// waitFirst waits until a record waits or the batcher is closed.
func (b *batcher[T]) waitFirst() {
	b.mu.Lock()
	for len(b.pending) == 0 && !b.closed {
		b.idle = true
		b.mu.Unlock()
		<-b.wake
		b.mu.Lock()
	}
	b.idle = false
	b.mu.Unlock()
}

// take removes up to k waiting records, oldest first. It also reports how
// many records are still to come (waiting, or held by producers waiting
// for space) and whether the batcher is closed.
func (b *batcher[T]) take(k int) (chunk []T, left int, closed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k >= len(b.pending) {
		chunk, b.pending = b.pending, b.spare[:0]
	} else {
		chunk = append(b.spare[:0], b.pending[:k]...)
		n := copy(b.pending, b.pending[k:])
		clear(b.pending[n:])
		b.pending = b.pending[:n]
	}
	b.spare = nil
	if len(chunk) > 0 && b.waiting > 0 {
		b.space.Broadcast()
	}
	return chunk, len(b.pending) + b.waiting, b.closed
}

// loop writes records in transactions on the driver connection dc.
func (b *batcher[T]) loop(ctx context.Context, dc any) error {
	conn, ok := dc.(interface {
		driver.ConnBeginTx
		driver.ConnPrepareContext
	})
	if !ok {
		return fmt.Errorf("sqlite driver connection %T lacks BeginTx or PrepareContext", dc)
	}
	st := &stmts{ctx: ctx, m: map[string]preparedStmt{}}
	defer func() {
		for _, s := range st.m {
			s.Close()
		}
	}()
	for name, q := range b.queries {
		s, err := conn.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %s: %w", name, err)
		}
		se, ok := s.(preparedStmt)
		if !ok {
			s.Close()
			return fmt.Errorf("sqlite driver statement %T lacks ExecContext or QueryContext", s)
		}
		st.m[name] = se
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		b.waitFirst()
		tx, err := conn.BeginTx(ctx, driver.TxOptions{})
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		timer.Reset(b.interval)
		n, expired, finished := 0, false, false
		for {
			chunk, left, closed := b.take(b.size - n)
			if len(chunk) > 0 {
				b.write(st, chunk)
				n += len(chunk)
				clear(chunk)
				b.spare = chunk[:0]
			}
			finished = closed && left == 0
			if n >= b.size || left == 0 && (closed || expired) {
				break
			}
			if left > 0 {
				continue
			}
			select {
			case <-b.wake:
			case <-timer.C:
				expired = true
			}
		}
		timer.Stop()
		// The counters go in every transaction, the last one included, so
		// the file's statistics match the records it holds.
		if b.beforeCommit != nil {
			if err := b.beforeCommit(st); err != nil {
				b.fail(err)
			}
		}
		if testCommit != nil {
			err = testCommit(tx)
		} else {
			err = tx.Commit()
		}
		if err != nil {
			b.fail(fmt.Errorf("commit: %w", err))
			tx.Rollback() // so that the next transaction can begin
		}
		if b.afterCommit != nil {
			b.afterCommit(err)
		}
		if finished {
			return nil
		}
	}
}
