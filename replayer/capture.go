package replayer

import (
	"cmp"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/replaykit/replay/snapshots"
)

// Capturing the target's answers (Config.Responses): a bounded sample per
// endpoint with bodies, and a hash of every other answer. The sample is
// fixed before each phase sends anything, from the request sequence alone,
// so both sides of a comparison sample the same exchanges; once a whole
// pass has been considered nothing more is admitted, and an answer outside
// the sample costs the hash of its body (snapshots.BodyHasher: CRC-32C, in
// hardware) and a map increment.

// ResponseSink receives the sampled answers; *snapshots.RunWriter is one.
// AddResponse must be safe for concurrent use and must not block for long.
type ResponseSink interface {
	AddResponse(s *snapshots.ResponseSample)
}

// Defaults of the capture's bounds.
const (
	// DefaultSampleExchanges is the number of distinct recorded exchanges
	// sampled per endpoint when Config.SampleExchanges is zero.
	DefaultSampleExchanges = 32
	// DefaultSampleBody is the most decoded body bytes a sample keeps when
	// Config.SampleBody is zero.
	DefaultSampleBody = 64 << 10
	// SampleAnswers is the number of answers kept per sampled exchange: two
	// answers of one build to the same request show what varies on its own.
	SampleAnswers = 2
)

// DefaultResponseHeaders are the response headers a sample keeps, on top of
// Config.ResponseHeaders: those a comparison may look at. Secrets
// (Set-Cookie) and per-connection headers are never kept.
var DefaultResponseHeaders = []string{
	"Content-Type", "Content-Encoding", "Content-Language", "Content-Disposition",
	"Location", "Cache-Control", "Expires", "Vary", "Etag", "Last-Modified",
	"Allow", "Retry-After", "Www-Authenticate",
}

// sampleSlot marks a template whose answers are sampled; taken counts the
// answers claimed.
type sampleSlot struct{ taken atomic.Int32 }

// capture is a Replayer's capture state.
type capture struct {
	sink      ResponseSink
	per       int      // exchanges sampled per endpoint
	limit     int      // decoded body bytes kept
	headers   []string // canonical names kept in samples
	admitted  map[string]int
	complete  bool // a whole pass was considered: nothing more is admitted
	endpoints map[int64]string
	shards    [16]hashShard
}

type hashKey struct {
	id     int64
	status int
	hash   uint64
}

type hashShard struct {
	mu       sync.Mutex
	m        map[hashKey]int64
	distinct map[hashKey]int // hashes per exchange and status (hash 0)
	_        [32]byte        // keeps shards on separate cache lines
}

// MaxHashes is the number of distinct body hashes kept per exchange and
// status: the answers beyond them (a body that changes every time: a
// timestamp, a UUID) are counted under OtherHashes, so that memory stays
// bounded however long the run.
const MaxHashes = 8

// OtherHashes is the ResponseHash.Hash of the answers to an exchange
// beyond its first MaxHashes distinct bodies of one status.
const OtherHashes = ^uint64(0)

func newCapture(cfg Config, tmpls []*template) *capture {
	if cfg.Responses == nil {
		return nil
	}
	cp := &capture{sink: cfg.Responses, per: cfg.SampleExchanges, limit: cfg.SampleBody,
		admitted: map[string]int{}, endpoints: map[int64]string{}}
	if cp.per == 0 {
		cp.per = DefaultSampleExchanges
	}
	if cp.limit <= 0 {
		cp.limit = DefaultSampleBody
	}
	seen := map[string]bool{}
	for _, h := range append(slices.Clone(DefaultResponseHeaders), cfg.ResponseHeaders...) {
		h = http.CanonicalHeaderKey(h)
		if h != "" && !seen[h] && h != "Set-Cookie" {
			seen[h] = true
			cp.headers = append(cp.headers, h)
		}
	}
	for _, t := range tmpls {
		cp.endpoints[t.id] = t.endpoint
	}
	for i := range cp.shards {
		cp.shards[i].m, cp.shards[i].distinct = map[hashKey]int64{}, map[hashKey]int{}
	}
	return cp
}

// admit adds to the sample the n templates at(0), at(1), … in order, while
// their endpoint has room. A Replayer's phases run one at a time, so no
// request is in flight meanwhile.
func (cp *capture) admit(n int, at func(i int) *template) {
	if cp == nil || cp.complete {
		return
	}
	for i := range n {
		t := at(i)
		if t.slot != nil || cp.admitted[t.endpoint] >= cp.per {
			continue
		}
		t.slot = new(sampleSlot)
		cp.admitted[t.endpoint]++
	}
}

// admitPass admits one whole pass of the request sequence from position
// g0, as pick orders it; after it nothing more can be admitted.
func (cp *capture) admitPass(g0 int64, n int, pick func(g int64) *template) {
	if cp == nil || cp.complete {
		return
	}
	cp.admit(n, func(i int) *template { return pick(g0 + int64(i)) })
	cp.complete = true
}

// admitLoad admits the exchanges of one pass of the load's request
// sequence, from the current position, in the order p's model sends them.
func (r *Replayer) admitLoad(p LoadPlan) {
	if r.capture == nil || r.capture.complete {
		return
	}
	n := int64(len(r.templates))
	pick := func(g int64) *template { return r.templates[g%n] }
	if p.Model() == "recorded" {
		pick = r.schedule(p).pick
	}
	r.capture.admitPass(r.cursor.Load(), int(n), pick)
}

// tap returns c's body tap, ready for an answer to t in phase, or nil when
// the answer is not captured (capture off, a warm-up request).
func (r *Replayer) tap(c *conn, t *template, phase string) *bodyTap {
	cp := r.capture
	if cp == nil || (phase != snapshots.PhaseLoad && phase != snapshots.PhaseExplain) {
		return nil
	}
	tp := &c.tap
	// Read first: once the exchange has its answers, no write (the
	// template is shared by every worker).
	sample := t.slot != nil && t.slot.taken.Load() < SampleAnswers && t.slot.taken.Add(1) <= SampleAnswers
	tp.start(sample, cp.limit, cp.headers)
	return tp
}

// captured keeps the answer read through tp (nil: not captured): a sample
// goes to the sink, any other answer is counted by hash. A request that
// failed or was canceled gives its sample back.
func (r *Replayer) captured(t *template, res *snapshots.Result, tp *bodyTap, canceled bool) {
	if tp == nil {
		return
	}
	if canceled || res.Error != "" || res.Status == 0 {
		if tp.sample {
			t.slot.taken.Add(-1)
		}
		return
	}
	cp := r.capture
	if tp.sample {
		cp.sink.AddResponse(tp.responseSample(t, res))
		return
	}
	cp.shards[uint64(t.id)%uint64(len(cp.shards))].count(hashKey{id: t.id, status: res.Status, hash: tp.hash.Sum64()})
}

// count counts one answer under k, or under OtherHashes when its exchange
// and status have MaxHashes distinct hashes already.
func (sh *hashShard) count(k hashKey) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.m[k]; !ok {
		es := hashKey{id: k.id, status: k.status}
		if sh.distinct[es] >= MaxHashes {
			k.hash = OtherHashes
		} else {
			sh.distinct[es]++
		}
	}
	sh.m[k]++
}

// ResponseHashes returns the answers counted by body hash so far (the
// answers outside the sample), sorted by exchange, status and hash; nil
// without Config.Responses. Call it between runs, or after the last.
func (r *Replayer) ResponseHashes() []snapshots.ResponseHash {
	cp := r.capture
	if cp == nil {
		return nil
	}
	var out []snapshots.ResponseHash
	for i := range cp.shards {
		sh := &cp.shards[i]
		sh.mu.Lock()
		for k, n := range sh.m {
			out = append(out, snapshots.ResponseHash{ExchangeID: k.id, Endpoint: cp.endpoints[k.id], Status: k.status, Hash: k.hash, Count: n})
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b snapshots.ResponseHash) int {
		return cmp.Or(cmp.Compare(a.ExchangeID, b.ExchangeID), cmp.Compare(a.Status, b.Status), cmp.Compare(a.Hash, b.Hash))
	})
	return out
}
