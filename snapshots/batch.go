package snapshots

import (
	"context"
	"database/sql"
	"database/sql/driver"
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
	// write inserts the record with the batcher's prepared statements.
	write(st *stmts) error
}

// stmts holds the writer's prepared statements, by name. They run on the
// driver's connection directly: database/sql's bookkeeping per call costs
// more than a fifth of an insert, and one goroutine owns the connection.
type stmts struct {
	ctx  context.Context
	m    map[string]driver.StmtExecContext
	args []driver.NamedValue // reused by each exec
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
	_, err := s.m[name].ExecContext(s.ctx, s.args)
	return err
}

// batcher writes records to a database on its own goroutine, in
// transactions of at most size records, each committed at most interval
// after its first record arrived. Producers never block on the disk unless
// the queue is full; then they wait rather than lose a record.
type batcher struct {
	db *sql.DB
	// path, when set, is the file db writes: a second connection
	// checkpoints its WAL into it in the background (see checkpoints).
	path     string
	queries  map[string]string // prepared once, by name
	interval time.Duration
	size     int
	logger   *slog.Logger
	// beforeCommit runs inside each transaction, after its records (e.g. to
	// store counters); nil skips.
	beforeCommit func(st *stmts) error

	mu       sync.RWMutex // guards closed against sends on a closed queue
	closed   bool
	queue    chan record
	done     chan struct{}
	err      error // first error; read after done is closed
	failures int

	stopCheckpoints, checkpointsDone chan struct{}
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
	b.stopCheckpoints = make(chan struct{})
	b.checkpointsDone = make(chan struct{})
	go b.run()
	go b.checkpoints()
}

// checkpoints copies the WAL into the database file every
// checkpointInterval from a connection of its own, so that the writing
// goroutine never stops to do it (its connection does not checkpoint).
// PASSIVE checkpoints never wait for, nor block, the writer or readers.
func (b *batcher) checkpoints() {
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

// run holds the database's one connection and writes until the queue is
// closed and drained.
func (b *batcher) run() {
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
		for range b.queue { // nothing can be written; never leave producers hanging
		}
	}
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
	close(b.stopCheckpoints)
	<-b.checkpointsDone
	return b.err
}

// fail records a write error: the first is returned by close, the first few
// are logged as they happen (a full disk fails every insert).
func (b *batcher) fail(err error) {
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

// loop writes records in transactions on the driver connection dc.
func (b *batcher) loop(ctx context.Context, dc any) error {
	conn, ok := dc.(interface {
		driver.ConnBeginTx
		driver.ConnPrepareContext
	})
	if !ok {
		return fmt.Errorf("sqlite driver connection %T lacks BeginTx or PrepareContext", dc)
	}
	st := &stmts{ctx: ctx, m: map[string]driver.StmtExecContext{}}
	defer func() {
		for _, s := range st.m {
			s.(driver.Stmt).Close()
		}
	}()
	for name, q := range b.queries {
		s, err := conn.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %s: %w", name, err)
		}
		se, ok := s.(driver.StmtExecContext)
		if !ok {
			s.Close()
			return fmt.Errorf("sqlite driver statement %T lacks ExecContext", s)
		}
		st.m[name] = se
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		// Wait for the first record of the next transaction.
		r, open := <-b.queue
		tx, err := conn.BeginTx(ctx, driver.TxOptions{})
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		n := 0
		if open {
			b.writeOne(st, r)
			n = 1
			timer.Reset(b.interval)
		}
	fill:
		for open && n < b.size {
			select {
			case r, open = <-b.queue:
				if open {
					b.writeOne(st, r)
					n++
				}
			case <-timer.C:
				break fill
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
		if err := tx.Commit(); err != nil {
			b.fail(fmt.Errorf("commit: %w", err))
			tx.Rollback() // so that the next transaction can begin
		}
		if !open {
			return nil
		}
	}
}

func (b *batcher) writeOne(st *stmts, r record) {
	if err := r.write(st); err != nil {
		b.fail(err)
	}
}
