package sqlcore

import (
	"testing"
	"time"
)

// TestUnattributedBounded: a long run's statements attributed to no request,
// one every millisecond for 100 s, are all counted in at most 32,768
// intervals (MaxUnattributedBins), the intervals widened to fit.
func TestUnattributedBounded(t *testing.T) {
	var u unattributed
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 100_000
	for i := range n {
		u.add(t0.Add(time.Duration(i) * time.Millisecond))
	}
	if len(u.h.Counts) > 1<<15 {
		t.Errorf("%d intervals kept, want at most %d", len(u.h.Counts), 1<<15)
	}
	if got := u.h.Total(); got != n {
		t.Errorf("%d statements counted, want %d", got, n)
	}
	if u.h.Bin < 4*time.Millisecond {
		t.Errorf("intervals of %s, want them widened to 4 ms or more", u.h.Bin)
	}
}
