// Package spool copies the batches of exchanges a load will read from a
// snapshot into a temporary file before the load starts, so that the load
// reads each batch back with one read and a decode (under 1 µs of CPU an
// exchange) instead of SQLite's row machinery (4–6 µs): on a machine the
// load saturates, that CPU is taken from the requests sent. Memory stays
// bounded: only the batches read are held, as before.
//
// The file is removed from the directory as soon as it is created, so a
// killed process leaves nothing behind; its space is freed when the File
// is closed or the process ends.
package spool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/replaykit/replay/snapshots"
)

// ErrNoSpool is returned by Build when no spool can be made: it would not
// leave Reserve bytes free in its directory, or the file cannot be
// created or written. The caller reads from the snapshot instead.
var ErrNoSpool = errors.New("no spool")

// Reserve is the free space a spool leaves in its directory.
const Reserve = 1 << 30

// File holds n batches of encoded exchanges.
type File struct {
	f      *os.File
	offs   []int64 // batch b is [offs[b], offs[b+1])
	intern interner
}

// Build reads the batches 0 to n-1 with load (two at a time: it must be
// safe for concurrent use) and writes them to a new spool in dir (the
// system's temporary directory when empty). It fails with ErrNoSpool,
// before writing much, when the spool would fill the disk (the size is
// estimated from the first batch) or cannot be written.
func Build(ctx context.Context, dir string, n int, load func(b int) ([]*snapshots.Exchange, error)) (*File, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "replay-spool-*")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoSpool, err)
	}
	os.Remove(f.Name())
	s := &File{f: f, offs: make([]int64, 1, min(n, 1<<16)+1)}
	if err := s.fill(ctx, dir, n, load); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// encoded is a batch read and encoded, or why it could not be.
type encoded struct {
	b   []byte
	err error
}

// fill loads and encodes the batches two at a time, at most ahead
// batches ahead of the one written, and writes them in order.
func (s *File) fill(ctx context.Context, dir string, n int, load func(b int) ([]*snapshots.Exchange, error)) error {
	const workers, ahead = 2, 4
	// Batch b goes through slot b%ahead: the feeder hands out b only when
	// the writer took b-ahead.
	var ready [ahead]chan encoded
	for i := range ready {
		ready[i] = make(chan encoded, 1) // a worker never waits on the writer
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	next, tokens := make(chan int), make(chan struct{}, ahead)
	wg.Go(func() {
		defer close(next)
		for b := range n {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case next <- b:
			case <-ctx.Done():
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			for b := range next {
				exs, err := load(b)
				var buf []byte
				if err == nil {
					buf = encodeBatch(exs)
				}
				ready[b%ahead] <- encoded{buf, err}
			}
		})
	}
	var off int64
	for b := range n {
		var e encoded
		select {
		case e = <-ready[b%ahead]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-tokens
		if e.err != nil {
			return e.err
		}
		if b == 0 {
			if err := room(dir, int64(len(e.b))*int64(n)); err != nil {
				return err
			}
		}
		if _, err := s.f.Write(e.b); err != nil {
			return fmt.Errorf("%w: %v", ErrNoSpool, err)
		}
		off += int64(len(e.b))
		s.offs = append(s.offs, off)
	}
	return nil
}

// room fails with ErrNoSpool when writing need bytes to dir would leave
// less than Reserve free.
func room(dir string, need int64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // unknown: try, a full disk fails the write
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free-need < Reserve {
		return fmt.Errorf("%w: about %d MB needed in %s, %d MB free", ErrNoSpool, need>>20, dir, free>>20)
	}
	return nil
}

// Len returns the number of batches.
func (s *File) Len() int { return len(s.offs) - 1 }

// Size returns the spool's size in bytes.
func (s *File) Size() int64 { return s.offs[len(s.offs)-1] }

// Batch reads batch b back. Safe for concurrent use.
func (s *File) Batch(b int) ([]*snapshots.Exchange, error) {
	if b < 0 || b >= s.Len() {
		return nil, fmt.Errorf("spool: batch %d of %d", b, s.Len())
	}
	n := int(s.offs[b+1] - s.offs[b])
	p := bufs.Get().(*[]byte)
	defer bufs.Put(p)
	if cap(*p) < n {
		*p = make([]byte, n)
	}
	buf := (*p)[:n]
	if _, err := s.f.ReadAt(buf, s.offs[b]); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return nil, fmt.Errorf("spool: read batch %d: %w", b, err)
	}
	exs, err := decodeBatch(buf, &s.intern) // shares nothing with buf
	if err != nil {
		return nil, fmt.Errorf("spool: batch %d: %w", b, err)
	}
	return exs, nil
}

// bufs are the buffers batches are read into.
var bufs = sync.Pool{New: func() any { return new([]byte) }}

// Close closes the spool and frees its space.
func (s *File) Close() error { return s.f.Close() }
