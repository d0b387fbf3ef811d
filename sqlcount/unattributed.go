package sqlcount

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

func (u *unattributed) add(start time.Time) {
	u.mu.Lock()
	u.h.Add(start)
	u.mu.Unlock()
}

// Unattributed returns (with Config.KeepUnattributed; else an empty
// histogram), per interval of snapshots.DefaultSQLBin, the
// statements completed so far that were attributed to no request (a pool's
// empty pings excluded): those that ran while requests overlapped, with no
// sqlcommenter comment to tell them apart, and those of no request at all.
// analyzer.EstimateSQL shares them out over the requests in flight.
func (p *Proxy) Unattributed() snapshots.SQLHistogram {
	p.unattr.mu.Lock()
	defer p.unattr.mu.Unlock()
	return snapshots.SQLHistogram{Bin: snapshots.DefaultSQLBin, Counts: maps.Clone(p.unattr.h.Counts)}
}
