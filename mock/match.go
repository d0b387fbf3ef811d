package mock

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"sync"

	"github.com/replaykit/replay/internal/idlist"
	"github.com/replaykit/replay/pbdecode"
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

// entry is one distinct recorded request, indexed, and the exchanges that
// recorded it.
type entry struct {
	req     request
	answers []int32 // the exchanges' positions in recorded order (store)
	order   int     // position in recorded order (of its first exchange)
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
	http2s    map[string]bool        // services recorded over HTTP/2
	grpcFirst map[string]bool        // "service path" of gRPC methods matched on their first message (grpc.go)

	// taken is one Server's state: a matcher shares everything else with
	// the other Servers of an Index.
	taken *taken
}

// taken counts the answers each entry gave (by entry.order).
type taken struct {
	mu   sync.Mutex
	next []int32
}

// forServer returns a copy of m with its own answers taken.
func (m *matcher) forServer() *matcher {
	c := *m
	c.taken = &taken{next: make([]int32, len(m.entries))}
	return &c
}

func newMatcher(exs []*snapshots.Exchange, vol volatility, rules []snapshots.Rule) (*matcher, *idlist.List, error) {
	ix := newIndexer(nil)
	for _, e := range byRecordedOrder(exs) {
		if err := ix.add(e); err != nil {
			return nil, nil, err
		}
	}
	return ix.matcher(vol, rules).forServer(), &ix.calls, nil
}

// byRecordedOrder returns the non-nil exchanges of exs by start, then by
// ID; stable for equal keys.
func byRecordedOrder(exs []*snapshots.Exchange) []*snapshots.Exchange {
	out := make([]*snapshots.Exchange, 0, len(exs))
	for _, e := range exs {
		if e != nil {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b *snapshots.Exchange) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// indexer builds a matcher's entries from exchanges given in recorded
// order, one entry per distinct request, so that a recording of millions of
// calls to a few thousand URLs holds a few thousand requests and an ID per
// call.
type indexer struct {
	entries  []*entry
	calls    idlist.List // exchange IDs by position in recorded order
	byKey    map[string]*entry
	redacted map[string]bool
	keys     []string // redacted keys, in order found
	http2    map[string]bool
	first    map[string]bool   // as matcher.grpcFirst
	dec      *pbdecode.Decoder // decodes gRPC messages
}

func newIndexer(dec *pbdecode.Decoder) *indexer {
	return &indexer{byKey: map[string]*entry{}, redacted: map[string]bool{}, http2: map[string]bool{}, first: map[string]bool{}, dec: dec}
}

// add indexes e, an outbound exchange (inbound ones and nil are skipped);
// its response is not kept.
func (ix *indexer) add(e *snapshots.Exchange) error {
	if e == nil || e.Direction == snapshots.Inbound {
		return nil
	}
	q, err := fromExchange(e)
	if err != nil {
		return err
	}
	if e.IsGRPC() {
		first := interleaved(e)
		if first {
			ix.first[q.service+" "+q.path] = true
		}
		u, _ := url.Parse(e.URL) // fromExchange parsed it
		q = grpcRequest(q.scheme, q.service, u, grpcBody(ix.dec, q.path, e.Messages, first))
	}
	if e.Proto == "HTTP/2.0" || e.IsGRPC() {
		ix.http2[q.service] = true
	}
	pos := int32(ix.calls.Len())
	ix.calls.Append(e.ID)
	k := q.scheme + " " + q.exactKey()
	if en := ix.byKey[k]; en != nil {
		en.answers = append(en.answers, pos)
		return nil
	}
	for _, rk := range redactedKeys([]*snapshots.Exchange{e}) {
		if !ix.redacted[rk] {
			ix.redacted[rk] = true
			ix.keys = append(ix.keys, rk)
		}
	}
	en := &entry{req: q, answers: []int32{pos}, order: len(ix.entries)}
	ix.byKey[k] = en
	ix.entries = append(ix.entries, en)
	return nil
}

// matcher returns the matcher of the exchanges added, with the volatile
// keys found redacted in them on top of vol's.
func (ix *indexer) matcher(vol volatility, rules []snapshots.Rule) *matcher {
	m := &matcher{vol: vol, rules: rules, loosest: Template, byService: map[string][]*entry{},
		byRoute: map[string][]*entry{}, byEP: map[string][]*entry{}, entries: ix.entries, http2s: ix.http2, grpcFirst: ix.first}
	for i := range m.levels {
		m.levels[i] = map[string][]*entry{}
	}
	for _, en := range m.entries {
		en.req.prepare(vol)
		en.answers = idlist.Trim(en.answers)
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
	return m
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

// match returns the recorded request that answers q, the position of the
// exchange that answers (in recorded order: store), and the level it
// matched at, or nil. Within a
// group of equally good candidates the first with an answer not yet used
// answers, so that the nth identical request gets the nth recorded
// response; once all are used the last one answers again.
func (m *matcher) match(q *request) (*entry, int, Level) {
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
		en, id := m.take(group)
		return en, id, Level(l + 1)
	}
	return nil, 0, 0
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

// take returns the first entry of group with an unused answer and that
// answer, marking it used, or the last one's last answer when all are
// used.
func (m *matcher) take(group []*entry) (*entry, int) {
	t := m.taken
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, en := range group {
		if n := t.next[en.order]; int(n) < len(en.answers) {
			t.next[en.order]++
			return en, int(en.answers[n])
		}
	}
	en := group[len(group)-1]
	return en, int(en.answers[len(en.answers)-1])
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
	return m.http2s[service]
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
