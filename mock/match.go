package mock

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/replaykit/replay/snapshots"
)

// Level says how a request matched a recorded one.
type Level int

// Matching levels, tried in this order.
const (
	// Exact: method, service, path, query as sent and body (JSON canonical).
	Exact Level = iota + 1
	// Loose: as Exact, but query parameter order and volatile values ignored.
	Loose
	// Template: as Loose, but path segments that are ids may differ (the
	// endpoint template, e.g. "GET /items/{id}", must be the same); the
	// recorded request most similar to the request answers.
	Template
)

// ParseLevel parses "exact", "loose" or "template".
func ParseLevel(s string) (Level, error) {
	for _, l := range []Level{Exact, Loose, Template} {
		if s == l.String() {
			return l, nil
		}
	}
	return 0, fmt.Errorf("match level %q: want exact, loose or template", s)
}

func (l Level) String() string {
	switch l {
	case Exact:
		return "exact"
	case Loose:
		return "loose"
	case Template:
		return "template"
	}
	return "none"
}

// entry is one recorded exchange, indexed.
type entry struct {
	ex    *snapshots.Exchange
	req   request
	order int // position in recorded order
}

// matcher finds the recorded exchange that answers a request. Safe for
// concurrent use.
type matcher struct {
	vol       volatility
	rules     []snapshots.Rule
	loosest   Level    // the last level tried
	entries   []*entry // recorded order
	byService map[string][]*entry
	byRoute   map[string][]*entry    // by method, service and unescaped path
	byEP      map[string][]*entry    // by service and endpoint template
	levels    [3]map[string][]*entry // Exact, Loose, Template; each group in recorded order

	mu   sync.Mutex
	used []bool // by entry.order: answered a request already
}

func newMatcher(exs []*snapshots.Exchange, vol volatility, rules []snapshots.Rule) (*matcher, error) {
	m := &matcher{vol: vol, rules: rules, loosest: Template, byService: map[string][]*entry{},
		byRoute: map[string][]*entry{}, byEP: map[string][]*entry{}}
	for i := range m.levels {
		m.levels[i] = map[string][]*entry{}
	}
	for _, e := range exs {
		if e == nil || e.Direction == snapshots.Inbound {
			continue
		}
		q, err := fromExchange(e)
		if err != nil {
			return nil, err
		}
		q.prepare(vol)
		m.entries = append(m.entries, &entry{ex: e, req: q})
	}
	// Recorded order: by start, then by ID; stable for equal keys.
	slices.SortStableFunc(m.entries, func(a, b *entry) int {
		if c := a.ex.Start.Compare(b.ex.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.ex.ID, b.ex.ID)
	})
	for i, en := range m.entries {
		en.order = i
		m.byService[en.req.service] = append(m.byService[en.req.service], en)
		rk := routeKey(&en.req)
		m.byRoute[rk] = append(m.byRoute[rk], en)
		for l := range m.levels {
			if k := m.key(&en.req, l); k != "" {
				m.levels[l][k] = append(m.levels[l][k], en)
			}
		}
		if en.req.endpoint != "" {
			ek := en.req.service + " " + en.req.endpoint
			m.byEP[ek] = append(m.byEP[ek], en)
		}
	}
	m.used = make([]bool, len(m.entries))
	return m, nil
}

// key returns q's key at level l (0: Exact, 1: Loose, 2: Template); ""
// when there is none.
func (m *matcher) key(q *request, l int) string {
	if l == 0 {
		return q.exactKey()
	}
	q.prepare(m.vol)
	if l == 1 {
		return q.looseKey()
	}
	return q.templateKey(m.rules)
}

// match returns the recorded exchange that answers q and the level it
// matched at, or nil. Within a group of equally good candidates the first
// not yet used answers, so that the nth identical request gets the nth
// recorded response; once all are used the last one answers again.
func (m *matcher) match(q *request) (*entry, Level) {
	for l := range int(m.loosest) {
		k := m.key(q, l)
		if k == "" {
			continue
		}
		group := m.levels[l][k]
		if len(group) == 0 {
			continue
		}
		if Level(l+1) == Template {
			group = m.strongest(q, group)
		}
		return m.take(group), Level(l + 1)
	}
	return nil, 0
}

// strongest keeps the candidates most similar to q, in recorded order.
func (m *matcher) strongest(q *request, group []*entry) []*entry {
	q.prepare(m.vol)
	best, out := -1<<31, []*entry(nil)
	for _, en := range group {
		switch s := similarity(q, &en.req, m.vol); {
		case s > best:
			best, out = s, append(out[:0], en)
		case s == best:
			out = append(out, en)
		}
	}
	return out
}

// take returns the first unused entry of group, marking it used, or the
// last one when all are used.
func (m *matcher) take(group []*entry) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, en := range group {
		if !m.used[en.order] {
			m.used[en.order] = true
			return en
		}
	}
	return group[len(group)-1]
}

func routeKey(q *request) string { return q.method + " " + q.service + " " + q.plainPath }

// closest returns the recorded request most similar to q, or nil when
// nothing is recorded. It looks among those with q's method and path first,
// then with q's endpoint, then q's service, then all.
func (m *matcher) closest(q *request) *entry {
	m.key(q, 2) // prepared, endpoint computed
	var cands []*entry
	for _, tier := range [][]*entry{m.byRoute[routeKey(q)], m.byEP[q.service+" "+q.endpoint], m.byService[q.service], m.entries} {
		if len(tier) > 0 {
			cands = tier
			break
		}
	}
	var best *entry
	bestScore := 0
	for _, en := range cands {
		if s := similarity(q, &en.req, m.vol); best == nil || s > bestScore {
			best, bestScore = en, s
		}
	}
	return best
}

// services returns the recorded services, sorted.
func (m *matcher) services() []string {
	out := make([]string, 0, len(m.byService))
	for s := range m.byService {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// http2 reports whether service was called over HTTP/2 in the recording.
func (m *matcher) http2(service string) bool {
	for _, en := range m.byService[service] {
		if en.ex.Proto == "HTTP/2.0" {
			return true
		}
	}
	return false
}

// scheme returns the scheme service was recorded with ("https" wins).
func (m *matcher) scheme(service string) string {
	scheme := "http"
	for _, en := range m.byService[service] {
		if en.req.scheme == "https" {
			return "https"
		}
	}
	return scheme
}
