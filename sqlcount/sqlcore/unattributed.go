package sqlcore

import (
	"maps"
	"sync"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// unattributed counts, per millisecond, the statements attributed to no
// request (pings excluded), for estimating the SQL of overlapping requests.
type unattributed struct {
	mu sync.Mutex
	h  snapshots.SQLHistogram
}

// MaxUnattributedBins bounds the intervals the histogram of unattributed
// statements keeps: past it, the intervals double in width (1 ms, 2 ms, 4
// ms…), so that over a long run it stays under a few MB while the estimate
// loses only resolution.
const MaxUnattributedBins = 1 << 15

func (u *unattributed) add(start time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.h.Bin <= 0 {
		u.h.Bin = snapshots.DefaultSQLBin
	}
	u.h.Add(start)
	for len(u.h.Counts) > MaxUnattributedBins {
		coarsen(&u.h)
	}
}

// coarsen doubles the width of h's intervals, adding their counts up.
func coarsen(h *snapshots.SQLHistogram) {
	wide := make(map[int64]int64, len(h.Counts)/2+1)
	for k, n := range h.Counts {
		k2 := k / 2
		if k < 0 && k%2 != 0 {
			k2-- // floor, as for times before 1970
		}
		wide[k2] += n
	}
	h.Bin *= 2
	h.Counts = wide
}

// Unattributed returns (with Config.KeepUnattributed; else an empty
// histogram), per interval of snapshots.DefaultSQLBin (wider over a long
// run: MaxUnattributedBins), the
// statements completed so far that were attributed to no request (a pool's
// empty pings excluded): those that ran while requests overlapped, with no
// sqlcommenter comment to tell them apart, and those of no request at all.
// analyzer.EstimateSQL shares them out over the requests in flight.
func (p *Proxy) Unattributed() snapshots.SQLHistogram {
	p.unattr.mu.Lock()
	defer p.unattr.mu.Unlock()
	bin := p.unattr.h.Bin
	if bin <= 0 {
		bin = snapshots.DefaultSQLBin
	}
	return snapshots.SQLHistogram{Bin: bin, Counts: maps.Clone(p.unattr.h.Counts)}
}
