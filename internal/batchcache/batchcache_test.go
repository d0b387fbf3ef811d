package batchcache

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestWindow: read from first to last, the cache never holds more than its
// window, loads each batch once, ahead of need (so a reader finds it
// loading or loaded), and gives
// every batch its own value, however many goroutines ask at once.
func TestWindow(t *testing.T) {
	var loads [100]atomic.Int32
	c := New(100, 3, func(b int) (int, error) {
		loads[b].Add(1)
		return b * 10, nil
	})
	for b := range 100 {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if v, err := c.Get(b); v != b*10 || err != nil {
					t.Errorf("Get(%d) = %d, %v", b, v, err)
				}
			}()
		}
		wg.Wait()
		c.mu.Lock()
		ahead := c.m[(b+1)%100] != nil
		c.mu.Unlock()
		if !ahead {
			t.Errorf("after batch %d: the next one is not being read ahead", b)
		}
		if n := c.Len(); n > 3 {
			t.Fatalf("after batch %d: %d batches held, want at most 3", b, n)
		}
	}
	for b := range loads {
		want := int32(1)
		if b == 0 {
			want = 2 // the last Get reads it ahead again, for the next pass
		}
		if n := loads[b].Load(); n != want {
			t.Errorf("batch %d loaded %d times, want %d", b, n, want)
		}
	}
}
