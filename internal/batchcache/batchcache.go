// Package batchcache keeps a window of batches of a long sequence in
// memory, read ahead of need: what lets replay read a snapshot of millions
// of exchanges as a load goes, in bounded memory.
package batchcache

import (
	"sync"
	"sync/atomic"
)

// Cache keeps the last window batches loaded, loading each once
// however many goroutines ask for it, and the next one ahead of need.
type Cache[T any] struct {
	n      int // batches in all
	window int
	load   func(b int) (T, error)
	loads  atomic.Int64

	mu    sync.Mutex
	m     map[int]*batch[T]
	order []int // in order of loading: the oldest goes first
}

type batch[T any] struct {
	ready chan struct{}
	v     T
	err   error
}

// New returns a cache of the batches 0 to n-1 that keeps window of them,
// reading each with load (from another goroutine: it must be safe for
// concurrent use).
func New[T any](n, window int, load func(b int) (T, error)) *Cache[T] {
	return &Cache[T]{n: n, window: window, load: load, m: map[int]*batch[T]{}}
}

// Get returns batch b, loading it if needed, and starts loading b+1 (b+1
// of n wraps to 0) when it is not held, so that a reader going forward
// finds its next batch read.
func (c *Cache[T]) Get(b int) (T, error) {
	c.mu.Lock()
	e := c.m[b]
	if e == nil {
		e = c.start(b)
	}
	if next := (b + 1) % c.n; c.m[next] == nil {
		c.start(next)
	}
	c.mu.Unlock()
	<-e.ready
	return e.v, e.err
}

// start loads b in the background, forgetting the oldest batch when the
// window is full (its readers keep their copy); c.mu is held.
func (c *Cache[T]) start(b int) *batch[T] {
	e := &batch[T]{ready: make(chan struct{})}
	c.m[b] = e
	c.order = append(c.order, b)
	for len(c.order) > c.window {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.loads.Add(1)
	go func() {
		e.v, e.err = c.load(b)
		close(e.ready)
	}()
	return e
}

// Len returns the number of batches held now.
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Loads returns the number of batches loaded so far.
func (c *Cache[T]) Loads() int64 { return c.loads.Load() }
