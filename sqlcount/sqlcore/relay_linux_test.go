package sqlcore

import (
	"log/slog"
	"testing"
)

// TestLoopsTakeTheLeastBusy: a new connection goes to the loop with the
// fewest connections, so that short connections (a pool's probe, a cancel)
// do not leave the long ones piled onto one loop.
func TestLoopsTakeTheLeastBusy(t *testing.T) {
	p := &Proxy{cfg: Config{EventLoops: 3}, log: slog.New(slog.DiscardHandler)}
	ls := newLoops(p)
	defer ls.close()
	seen := map[*eventLoop]bool{}
	for range 3 {
		l := ls.get()
		if l == nil {
			t.Fatal("no loop with EventLoops 3")
		}
		seen[l] = true
		l.live.Add(1) // as add does
	}
	if len(seen) != 3 {
		t.Fatalf("3 connections went to %d loops, want 3", len(seen))
	}
	// The first loop's connection ends and the second loop takes five
	// more: the next connection goes to the first loop (none), the one
	// after to the first or the third (one each), never the second.
	ls.all[0].live.Add(-1)
	ls.all[1].live.Add(5)
	if l := ls.get(); l != ls.all[0] {
		t.Fatalf("a connection went to a loop with %d connections, not the idle one", l.live.Load())
	} else {
		l.live.Add(1)
	}
	if l := ls.get(); l == ls.all[1] {
		t.Fatal("a connection went to the loop with six connections")
	}
}
