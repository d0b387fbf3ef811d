package recorder

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/replaykit/replay/snapshots"
)

// Tally is a Sink that counts exchanges per endpoint, and the SQL
// statements of each inbound one, for a recording's summary, and passes
// everything on to a snapshot writer. Safe for concurrent use.
type Tally struct {
	w     *snapshots.Writer
	rules []snapshots.Rule

	mu      sync.Mutex
	rows    map[tallyKey]*TallyRow
	pending map[int64]int // statements of inbound exchanges still in flight
	// recent are the rows of the inbound exchanges added last, by exchange
	// ID, for a statement reported after its exchange was written (the SQL
	// proxy may see a statement complete after the app has answered);
	// recentIDs is their ring, oldest at recentNext.
	recent     map[int64]*TallyRow
	recentIDs  [recentExchanges]int64
	recentNext int
	statements int64
	attributed int64
}

// recentExchanges is how many written inbound exchanges a Tally remembers
// for late statements; maxPending bounds the statements' exchanges not yet
// written (a request that never completes leaves its count behind: past
// the bound the oldest half is dropped, so a long recording's memory stays
// flat).
const (
	recentExchanges = 4096
	maxPending      = 1 << 16
)

type tallyKey struct {
	dir      snapshots.Direction
	service  string
	endpoint string
}

// TallyRow counts the exchanges of one endpoint.
type TallyRow struct {
	Direction snapshots.Direction
	Service   string
	Endpoint  string
	// Exchanges is the number of exchanges recorded.
	Exchanges int64
	// SQL is the number of statements attributed to these exchanges; always
	// zero for outbound ones.
	SQL int64
	// SQLMethod, when set, says how SQLPerRequest was found: "exact",
	// "estimated" (SQLMargin is the half-width of its 95% interval) or
	// "unknown" (a lower bound). Empty: the summary shows SQL/Exchanges.
	// The recorder leaves them empty; a caller that estimates fills them.
	SQLMethod     string
	SQLPerRequest float64
	SQLMargin     float64
}

// TallySummary is what a Tally counted.
type TallySummary struct {
	// Rows are sorted by direction, service and endpoint.
	Rows []TallyRow
	// Statements is the number of SQL statements, Attributed the number of
	// them that belong to an inbound request.
	Statements, Attributed int64
}

var _ Sink = (*Tally)(nil)

// NewTally returns a Tally writing to w; exchanges without an endpoint get
// one computed with rules (snapshots.EndpointOf, so an inbound GraphQL or
// body-rule request gets its operation).
func NewTally(w *snapshots.Writer, rules []snapshots.Rule) *Tally {
	return &Tally{w: w, rules: rules, rows: map[tallyKey]*TallyRow{}, pending: map[int64]int{}, recent: map[int64]*TallyRow{}}
}

// NewID reserves an exchange ID in the snapshot.
func (t *Tally) NewID() int64 { return t.w.NewID() }

// CountSeen counts a request seen, recorded or not.
func (t *Tally) CountSeen(d snapshots.Direction) { t.w.CountSeen(d) }

// AddExchange counts e under its endpoint, computing the endpoint when e
// has none, and writes it.
func (t *Tally) AddExchange(e *snapshots.Exchange) {
	if e.Endpoint == "" {
		e.Endpoint = snapshots.EndpointOf(e, t.rules)
	}
	k := tallyKey{e.Direction, e.Service, e.Endpoint}
	t.mu.Lock()
	row := t.rows[k]
	if row == nil {
		row = &TallyRow{Direction: k.dir, Service: k.service, Endpoint: k.endpoint}
		t.rows[k] = row
	}
	row.Exchanges++
	if e.Direction == snapshots.Inbound {
		if n, ok := t.pending[e.ID]; ok {
			row.SQL += int64(n)
			delete(t.pending, e.ID)
		}
		t.remember(e.ID, row)
	}
	t.mu.Unlock()
	t.w.AddExchange(e)
}

// AddStatement counts s for the exchange it belongs to, and writes it. A
// SQL proxy reports a statement before the client sees it complete, so
// before the exchange ends.
func (t *Tally) AddStatement(s *snapshots.Statement) {
	t.mu.Lock()
	t.statements++
	if s.ExchangeID != 0 {
		t.attributed++
		if row := t.recent[s.ExchangeID]; row != nil {
			row.SQL++
		} else {
			t.pending[s.ExchangeID]++
			if len(t.pending) > maxPending {
				t.dropOldestPending()
			}
		}
	}
	t.mu.Unlock()
	t.w.AddStatement(s)
}

// remember keeps row as the row of inbound exchange id for late statements,
// forgetting the oldest remembered; t.mu is held.
func (t *Tally) remember(id int64, row *TallyRow) {
	if old := t.recentIDs[t.recentNext]; old != 0 {
		delete(t.recent, old)
	}
	t.recentIDs[t.recentNext] = id
	t.recent[id] = row
	t.recentNext = (t.recentNext + 1) % recentExchanges
}

// dropOldestPending forgets the pending counts of the older half of the
// exchanges waiting (the lowest IDs: IDs grow as requests start); t.mu is
// held.
func (t *Tally) dropOldestPending() {
	ids := slices.Sorted(maps.Keys(t.pending))
	for _, id := range ids[:len(ids)/2] {
		delete(t.pending, id)
	}
}

// Summary returns what has been counted so far.
func (t *Tally) Summary() TallySummary {
	t.mu.Lock()
	defer t.mu.Unlock()
	var rows []TallyRow
	for _, r := range t.rows {
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b TallyRow) int {
		return strings.Compare(string(a.Direction)+"\x00"+a.Service+"\x00"+a.Endpoint, string(b.Direction)+"\x00"+b.Service+"\x00"+b.Endpoint)
	})
	return TallySummary{Rows: rows, Statements: t.statements, Attributed: t.attributed}
}
