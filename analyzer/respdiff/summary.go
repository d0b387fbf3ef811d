package respdiff

import (
	"cmp"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// Side is one side's answers to the requests of one endpoint.
type Side struct {
	// Samples are the answers compared field by field, by recorded
	// exchange ID, in the order they came (the same request answered
	// twice gives the side's own noise).
	Samples map[int64][]Answer
	// Hashes count the answers beyond the sample by body hash.
	Hashes []snapshots.ResponseHash
	// HashedOneIn, above 1, says Hashes hold those of 1 in that many of
	// the exchanges answered (HashSampled), so that a run of millions
	// of them is compared in bounded memory.
	HashedOneIn int64
	// Host is the host:port (or URL) the side was served from: in strings,
	// headers and text it reads as {host}, so that links to a build's own
	// address compare equal; "" leaves them as they are.
	Host string
}

// Add adds an answer to the request recorded as exchange id.
func (s *Side) Add(id int64, a Answer) {
	if s.Samples == nil {
		s.Samples = map[int64][]Answer{}
	}
	if a.parsed == nil {
		a.parsed = new(parsed)
	}
	s.Samples[id] = append(s.Samples[id], a)
}

// RecordedSide is the side of recorded exchanges: one answer each, and
// the hash of each complete recorded body that holds no redacted value (to
// compare the answers beyond the sample with), served from the first
// exchange's service.
func RecordedSide(exchanges []*snapshots.Exchange) *Side {
	s := &Side{Samples: map[int64][]Answer{}}
	for _, e := range exchanges {
		s.AddRecorded(e, true)
	}
	return s
}

// AddRecorded adds a recorded exchange to a side of them (RecordedSide),
// in order of ID: its hash, and its answer when sample (a build's answer
// to it was sampled). One read for its hash only is not kept: a recording
// of any size is then read in memory of its sample.
func (s *Side) AddRecorded(e *snapshots.Exchange, sample bool) {
	if s.Host == "" {
		s.Host = e.Service
	}
	if sample {
		if s.Samples == nil {
			s.Samples = map[int64][]Answer{}
		}
		s.Samples[e.ID] = nil // one answer per exchange, the last given
		s.Add(e.ID, FromExchange(e))
	}
	// A gRPC call's recorded answer (its document, replayer.GRPCAnswer)
	// hashes unlike a build's answer, hashed as it streams: its sample
	// alone is compared.
	if !e.ResponseTruncated() && !redacted(string(e.ResponseBody)) && !e.IsGRPC() {
		s.Hashes = append(s.Hashes, snapshots.ResponseHash{ExchangeID: e.ID, Endpoint: e.Endpoint, Status: e.Status,
			Hash: fnv64(e.ResponseBody), Count: 1})
	}
}

// Summary compares one endpoint's answers.
type Summary struct {
	// Compared counts the answers compared: Sampled and Hashed.
	Compared int64 `json:"compared"`
	// Sampled counts the answers compared field by field.
	Sampled int64 `json:"sampled"`
	// Hashed counts the answers beyond the sample compared by hash.
	Hashed int64 `json:"hashed"`
	// HashedOneIn, above 1, says those were the answers to 1 in that many
	// of the exchanges replayed (a run of more than MaxHashedRows
	// counts), chosen by exchange alike on both sides.
	HashedOneIn int64 `json:"hashed_one_in,omitempty"`
	// Differing counts the answers with a difference neither ignored nor
	// accepted.
	Differing int64 `json:"differing"`
	// Differences group those differences by path, most answers first.
	Differences []Group `json:"differences"`
	// Ignored lists what was ignored and why: learned noise (whether or
	// not it hid a difference between the builds), rules that hid one.
	Ignored []Ignored `json:"ignored"`
	// Accepted groups the differences --accept-diff names.
	Accepted []Group `json:"accepted,omitempty"`
}

// Group is the differences at one path, of one kind.
type Group struct {
	// Path is the generalised path ($.items[*].id, status, header:NAME…).
	Path string `json:"path"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Baseline and Candidate describe the first example: number 7,
	// string "7", absent.
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Count counts the answers with the difference, of Of compared
	// (Sampled, or Hashed for differences found by hash).
	Count int64 `json:"count"`
	Of    int64 `json:"of"`
	// Hashed says the differences were found by hash, beyond the sample.
	Hashed bool `json:"hashed,omitempty"`
	// Example is the first answer found with it.
	Example Example `json:"example"`
}

// Example points at one answer with a difference.
type Example struct {
	// ExchangeID is the recorded exchange replayed.
	ExchangeID int64 `json:"exchange_id"`
	// Path is the difference's concrete path ($.items[3].id).
	Path string `json:"path"`
	// Diff is a short unified diff of the two bodies ("-" reference, "+"
	// answer compared), JSON indented; "" when not shown.
	Diff string `json:"diff,omitempty"`
}

// Ignored is a path whose differences are ignored.
type Ignored struct {
	// Path is the path (or the rule's).
	Path string `json:"path"`
	// Reason says why: learned noise, a rule, a redacted recording.
	Reason string `json:"reason"`
	// Count counts the answers compared in which it hid a difference.
	Count int64 `json:"count"`
}

// Reasons of Ignored.
const (
	ReasonBaseline  = "varies between the baseline's answers to the same request"
	ReasonRecording = "differs between the recording and the baseline"
	ReasonBuild     = "varies between the build's answers to the same request"
	ReasonCandidate = "varies between the candidate's answers to the same request, one of them as the baseline's"
	ReasonRedacted  = "redacted in the recording"
	ReasonRule      = "--ignore"
)

// learnPair is two answers of one build to the same request (or the
// recording's and the baseline's), whose differences are noise.
type learnPair struct {
	a, b         Answer
	hostA, hostB string
	reason       string
	// keep, when set, says which of the pair's differences are noise.
	keep func(Diff) bool
}

// Endpoint compares the candidate's answers to one endpoint's requests
// with the baseline's. What differs between the baseline's two answers to
// the same request, and between the recording's answer (recorded may be
// nil) and the baseline's when both have the same status and the recording
// kept the whole body, is noise: it is ignored and listed (a list in another order makes that list unordered).
//
// Answers beyond the sample (Side.Hashes) are compared by hash, per
// exchange: they count as compared when the baseline has hashes of that
// exchange. They count as differing by status when the baseline answered
// that exchange with one status only and another came; by body only when,
// besides, the baseline's bodies for it all had one hash and the endpoint's
// bodies needed nothing ignored (no noise learned, no --ignore of a body
// path, no unordered list, no answer naming its own host): a hash cannot
// tell an ignored field from another.
func (c *Comparer) Endpoint(base, cand, recorded *Side) *Summary {
	var learn []learnPair
	for _, id := range sortedIDs(base.Samples) {
		as := base.Samples[id]
		for i := 1; i < len(as); i++ {
			learn = append(learn, learnPair{as[i-1], as[i], base.Host, base.Host, ReasonBaseline, nil})
		}
	}
	if recorded != nil {
		for _, id := range sortedIDs(base.Samples) {
			r, as := recorded.Samples[id], base.Samples[id]
			// A recorded body cut short or not kept (--body-limit) says
			// nothing of what varies in the body: learning from it would
			// hide every body difference.
			if len(r) > 0 && r[0].Status == as[0].Status && !r[0].Truncated && !(len(r[0].Body) == 0 && len(as[0].Body) > 0) {
				learn = append(learn, learnPair{r[0], as[0], recorded.Host, base.Host, ReasonRecording, nil})
			}
		}
	}
	return c.run(base, cand, append(learn, c.candidateNoise(base, cand)...), false)
}

// candidateNoise is what varies between the candidate's answers to the
// same request where one of them agrees with the baseline there: a value
// that follows state the builds share (a sequence both draw from, reset
// between phases) rather than the build, such as the id a POST makes up
// when the baseline answered it twice at the same point of the sequence
// and the candidate did not. A change the candidate made keeps every one
// of its answers apart from the baseline's, and stays a difference.
func (c *Comparer) candidateNoise(base, cand *Side) []learnPair {
	var learn []learnPair
	user := &noise{user: c.unordered}
	for _, id := range sortedIDs(cand.Samples) {
		as, bs := cand.Samples[id], base.Samples[id]
		if len(as) < 2 || len(bs) == 0 {
			continue
		}
		// The general paths at which each candidate answer differs from
		// the baseline's first.
		apart := make([]map[string]bool, len(as))
		for k, a := range as {
			env := &pairEnv{headers: c.headers, unordered: user.unordered, hostA: hostOf(base.Host), hostB: hostOf(cand.Host)}
			apart[k] = map[string]bool{}
			for _, d := range diffAnswers(bs[0], a, env) {
				apart[k][d.General()] = true
			}
		}
		agrees := func(d Diff) bool {
			return slices.ContainsFunc(apart, func(m map[string]bool) bool { return !m[d.General()] })
		}
		for i := 1; i < len(as); i++ {
			learn = append(learn, learnPair{as[i-1], as[i], cand.Host, cand.Host, ReasonCandidate, agrees})
		}
	}
	return learn
}

// Check compares a build's answers with the recorded ones (RecordedSide),
// the recording taking the baseline's place: what differs between the
// build's two answers to the same request is noise, and values the
// recording holds redacted are ignored. Hashes are compared as in Endpoint.
func (c *Comparer) Check(build, recorded *Side) *Summary {
	var learn []learnPair
	for _, id := range sortedIDs(build.Samples) {
		as := build.Samples[id]
		for i := 1; i < len(as); i++ {
			learn = append(learn, learnPair{as[i-1], as[i], build.Host, build.Host, ReasonBuild, nil})
		}
	}
	return c.run(recorded, build, learn, true)
}

// run compares other's answers with ref's, after learning noise.
func (c *Comparer) run(ref, other *Side, learn []learnPair, recording bool) *Summary {
	n := c.learnNoise(learn)
	env := &pairEnv{headers: c.headers, hostA: hostOf(ref.Host), hostB: hostOf(other.Host), unordered: n.unordered,
		hide: func(segs []seg) bool {
			d := Diff{segs: segs}
			_, rule := firstMatch(c.ignore, d)
			_, learned := firstMatch(n.paths, d)
			return rule || learned
		}}
	t := newTally(c, n, recording)
	for _, id := range sortedIDs(other.Samples) {
		refs := ref.Samples[id]
		if len(refs) == 0 {
			continue
		}
		for k, a := range other.Samples[id] {
			r := refs[min(k, len(refs)-1)]
			t.pair(id, r, a, env)
		}
	}
	// An accepted change changes the bytes of the answers beyond the
	// sample too: their hashes then tell nothing more.
	trust := n.empty() && len(t.accepted) == 0 && !c.ignoresBody() && !hostInBodies(ref, env.hostA) && !hostInBodies(other, env.hostB)
	t.hashes(ref.Hashes, other.Hashes, trust)
	if n := max(ref.HashedOneIn, other.HashedOneIn); n > 1 {
		t.s.HashedOneIn = n
	}
	return t.summary()
}

// hostOf is the host:port of a URL, or s itself.
func hostOf(s string) string {
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil {
			return u.Host
		}
	}
	return s
}

func sortedIDs(m map[int64][]Answer) []int64 { return slices.Sorted(maps.Keys(m)) }

// noise is what an endpoint learned varies on its own.
type noise struct {
	paths   []rulePath        // ignored with what is inside them
	reasons map[string]string // by path
	order   [][]seg           // arrays learned unordered
	user    [][]seg           // arrays the rules say are unordered
}

func (n *noise) empty() bool { return len(n.paths) == 0 && len(n.order) == 0 }

// unordered reports whether the array at segs is a multiset.
func (n *noise) unordered(segs []seg) bool {
	for _, u := range slices.Concat(n.user, n.order) {
		if len(u) == len(segs) && matchSegs(u, segs) {
			return true
		}
	}
	return false
}

// learnNoise learns the paths that differ within each pair.
func (c *Comparer) learnNoise(learn []learnPair) *noise {
	n := &noise{reasons: map[string]string{}, user: c.unordered}
	for _, p := range learn {
		env := &pairEnv{headers: c.headers, unordered: n.unordered, hostA: hostOf(p.hostA), hostB: hostOf(p.hostB)}
		for _, d := range diffAnswers(p.a, p.b, env) {
			if _, ok := firstMatch(c.ignore, d); ok || (p.keep != nil && !p.keep(d)) {
				continue
			}
			g := d.General()
			if _, ok := n.reasons[g]; ok {
				continue
			}
			if d.Kind == KindReordered {
				n.order = append(n.order, generalSegs(d.segs))
				n.reasons[g] = strings.Replace(p.reason, "varies", "order varies", 1)
				continue
			}
			rp, err := parseRulePath(g)
			if err != nil {
				continue
			}
			n.paths = append(n.paths, rp)
			n.reasons[g] = p.reason
		}
	}
	return n
}

// generalSegs is segs with every index any index.
func generalSegs(segs []seg) []seg {
	out := slices.Clone(segs)
	for i := range out {
		if out[i].kind == segIndex {
			out[i] = seg{kind: segAnyIndex}
		}
	}
	return out
}

// redacted reports whether s holds a value the recorder redacted (as is,
// or escaped in a URL).
func redacted(s string) bool {
	return strings.Contains(s, snapshots.Redacted) || strings.Contains(s, url.QueryEscape(snapshots.Redacted))
}

// tally groups the differences of the answers compared.
type tally struct {
	c         *Comparer
	n         *noise
	recording bool
	s         Summary
	groups    map[groupKey]*Group
	accepted  map[groupKey]*Group
	ignored   map[[2]string]*Ignored
}

type groupKey struct {
	path, kind, baseType, candType string
	hashed                         bool
}

func newTally(c *Comparer, n *noise, recording bool) *tally {
	t := &tally{c: c, n: n, recording: recording, groups: map[groupKey]*Group{}, accepted: map[groupKey]*Group{},
		ignored: map[[2]string]*Ignored{}}
	for g, why := range n.reasons {
		t.ignored[[2]string{g, why}] = &Ignored{Path: g, Reason: why}
	}
	return t
}

// pair compares one answer a with the reference r.
func (t *tally) pair(id int64, r, a Answer, env *pairEnv) {
	t.s.Sampled++
	seen := map[any]bool{}
	differing := false
	example, made := "", false // the pair's example diff, made once
	for _, d := range diffAnswers(r, a, env) {
		g, ig := t.classify(d, false)
		if ig != nil {
			if !seen[ig] {
				seen[ig] = true
				ig.Count++
			}
			continue
		}
		if !seen[g] {
			seen[g] = true
			if g.Count == 0 {
				if !made {
					example, made = exampleDiff(r, a, env), true
				}
				g.Example = Example{ExchangeID: id, Path: d.Path, Diff: example}
			}
			g.Count++
		}
		differing = differing || t.groups[keyOf(d, false)] == g
	}
	if differing {
		t.s.Differing++
	}
}

func keyOf(d Diff, hashed bool) groupKey {
	return groupKey{d.General(), d.Kind, d.Baseline.Type, d.Candidate.Type, hashed}
}

// classify finds where d goes: an Ignored entry, or a group of
// differences or of accepted ones.
func (t *tally) classify(d Diff, hashed bool) (*Group, *Ignored) {
	if p, ok := firstMatch(t.c.ignore, d); ok {
		return nil, t.ignore(p.text, ReasonRule)
	}
	if t.recording && redacted(d.Baseline.Text) {
		return nil, t.ignore(d.General(), ReasonRedacted)
	}
	if p, ok := firstMatch(t.n.paths, d); ok {
		return nil, t.ignore(p.text, t.n.reasons[p.text])
	}
	into := t.groups
	if _, ok := firstMatch(t.c.accept, d); ok {
		into = t.accepted
	}
	k := keyOf(d, hashed)
	g := into[k]
	if g == nil {
		g = &Group{Path: k.path, Kind: d.Kind, Baseline: d.Baseline.String(), Candidate: d.Candidate.String()}
		into[k] = g
	}
	return g, nil
}

func (t *tally) ignore(path, reason string) *Ignored {
	k := [2]string{path, reason}
	ig := t.ignored[k]
	if ig == nil {
		ig = &Ignored{Path: path, Reason: reason}
		t.ignored[k] = ig
	}
	return ig
}

// summary sorts the groups and returns the summary.
func (t *tally) summary() *Summary {
	s := t.s
	s.Compared = s.Sampled + s.Hashed
	s.Differences = sortGroups(t.groups, s)
	s.Accepted = sortGroups(t.accepted, s)
	for _, ig := range t.ignored {
		s.Ignored = append(s.Ignored, *ig)
	}
	slices.SortFunc(s.Ignored, func(a, b Ignored) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Reason, b.Reason))
	})
	return &s
}

// pathRank orders groups of one count: the status first, then the body,
// then headers.
func pathRank(p string) int {
	switch {
	case p == "status":
		return 0
	case strings.HasPrefix(p, "header:"):
		return 2
	}
	return 1
}

func sortGroups(m map[groupKey]*Group, s Summary) []Group {
	var out []Group
	for k, g := range m {
		if g.Count == 0 {
			continue
		}
		g.Of, g.Hashed = s.Sampled, k.hashed
		if k.hashed {
			g.Of = s.Hashed
		}
		out = append(out, *g)
	}
	// The sampled differences first: they say what changed; a hash only
	// that something did.
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(hashedRank(a), hashedRank(b)), cmp.Compare(b.Count, a.Count), cmp.Compare(pathRank(a.Path), pathRank(b.Path)), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Baseline, b.Baseline), cmp.Compare(a.Candidate, b.Candidate))
	})
	return out
}

func hashedRank(g Group) int {
	if g.Hashed {
		return 1
	}
	return 0
}
