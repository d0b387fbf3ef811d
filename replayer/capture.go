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

// HashSink takes the answers counted by hash in chunks as they fill
// (PendingHashes per shard of the count), when the ResponseSink is one too,
// so that memory stays bounded however many exchanges a run answers;
// ResponseHashes then returns those not handed over yet. The chunks of one
// exchange add up (*snapshots.RunWriter sums them on reading), and
// MaxHashes holds per chunk.
type HashSink interface {
	AddResponseHashes(h []snapshots.ResponseHash)
}

// PendingHashes is the most keys one of the capture's 16 shards counts
// before it hands them to a HashSink.
const PendingHashes = 2048

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

// sampleSlot marks an exchange whose answers are sampled; taken counts the
// answers claimed.
type sampleSlot struct{ taken atomic.Int32 }

// capture is a Replayer's capture state.
type capture struct {
	sink     ResponseSink
	per      int      // exchanges sampled per endpoint
	limit    int      // decoded body bytes kept
	headers  []string // canonical names kept in samples
	admitted map[string]int
	complete bool // a whole pass was considered: nothing more is admitted
	// slots are the sampled exchanges, by ID; written only by admit, between
	// phases.
	slots  map[int64]*sampleSlot
	shards [16]hashShard
	hashes HashSink // nil: keep every count until ResponseHashes
}

type hashKey struct {
	id     int64
	status int
	hash   uint64
}

// hashCount counts the answers of one key, and names its endpoint.
type hashCount struct {
	n        int64
	endpoint string
}

type hashShard struct {
	mu       sync.Mutex
	m        map[hashKey]*hashCount
	distinct map[hashKey]int // hashes per exchange and status (hash 0)
	// The key counted last and where it was counted: answers repeat, so
	// most are counted without a map lookup.
	last  hashKey
	lastC *hashCount
	_     [72]byte // keeps shards on separate cache lines
}

// MaxHashes is the number of distinct body hashes kept per exchange and
// status: the answers beyond them (a body that changes every time: a
// timestamp, a UUID) are counted under OtherHashes, so that memory stays
// bounded however long the run.
const MaxHashes = 8

// OtherHashes is the ResponseHash.Hash of the answers to an exchange
// beyond its first MaxHashes distinct bodies of one status.
const OtherHashes = ^uint64(0)

func newCapture(cfg Config) *capture {
	if cfg.Responses == nil {
		return nil
	}
	cp := &capture{sink: cfg.Responses, per: cfg.SampleExchanges, limit: cfg.SampleBody,
		admitted: map[string]int{}, slots: map[int64]*sampleSlot{}}
	cp.hashes, _ = cfg.Responses.(HashSink)
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
	for i := range cp.shards {
		cp.shards[i].m, cp.shards[i].distinct = map[hashKey]*hashCount{}, map[hashKey]int{}
	}
	return cp
}

// admit adds to the sample the n exchanges at(0), at(1), … (ID and
// endpoint) in order, while their endpoint has room; it stops early once
// every endpoint of the sequence is full. A Replayer's phases run one at a
// time, so no request is in flight meanwhile.
func (cp *capture) admit(n, endpoints int, at func(i int) (int64, string)) {
	if cp == nil || cp.complete {
		return
	}
	full := 0
	for ep, k := range cp.admitted {
		if k >= cp.per && ep != "" {
			full++
		}
	}
	for i := 0; i < n && full < endpoints; i++ {
		id, ep := at(i)
		if cp.slots[id] != nil || cp.admitted[ep] >= cp.per {
			continue
		}
		cp.slots[id] = new(sampleSlot)
		if cp.admitted[ep]++; cp.admitted[ep] >= cp.per {
			full++
		}
	}
}

// admitLoad admits the exchanges of one pass of the load's request
// sequence, from the current position, in the order p's model sends them;
// after it nothing more can be admitted.
func (r *Replayer) admitLoad(p LoadPlan) {
	if r.capture == nil || r.capture.complete {
		return
	}
	n := int64(r.seq.len())
	pos := func(g int64) int { return int(g % n) }
	if p.Model() == "recorded" {
		order := r.byStart()
		pos = func(g int64) int { return int(order[g%n]) }
	}
	g0 := r.cursor.Load()
	r.capture.admit(int(n), len(r.seq.firsts()), func(i int) (int64, string) {
		at := pos(g0 + int64(i))
		return r.seq.id(at), r.seq.endpoint(at)
	})
	r.capture.complete = true
}

// tap returns c's body tap, ready for an answer to t in phase, or nil when
// the answer is not captured (capture off, a warm-up request).
func (r *Replayer) tap(c *conn, t *template, phase string) *bodyTap {
	return r.tapInto(&c.tap, t, phase)
}

// tapInto is tap with the worker's tap tp.
func (r *Replayer) tapInto(tp *bodyTap, t *template, phase string) *bodyTap {
	cp := r.capture
	if cp == nil || (phase != snapshots.PhaseLoad && phase != snapshots.PhaseExplain) {
		return nil
	}
	// Read first: once the exchange has its answers, no write (the
	// template is shared by every worker).
	slot := cp.slots[t.id]
	sample := slot != nil && slot.taken.Load() < SampleAnswers && slot.taken.Add(1) <= SampleAnswers
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
			r.capture.slots[t.id].taken.Add(-1)
		}
		return
	}
	cp := r.capture
	if tp.sample {
		if t.h2 != nil && t.h2.grpc != nil {
			cp.sink.AddResponse(r.grpcSample(tp, t, res))
			return
		}
		cp.sink.AddResponse(tp.responseSample(t, res))
		return
	}
	sh := &cp.shards[uint64(t.id)%uint64(len(cp.shards))]
	if full := sh.count(hashKey{id: t.id, status: res.Status, hash: tp.hash.Sum64()}, t.endpoint); full && cp.hashes != nil {
		if h := sh.drain(); len(h) > 0 {
			cp.hashes.AddResponseHashes(h)
		}
	}
}

// count counts one answer under k, or under OtherHashes when its exchange
// and status have MaxHashes distinct hashes already.
func (sh *hashShard) count(k hashKey, endpoint string) (full bool) {
	sh.mu.Lock()
	c := sh.lastC
	if c == nil || sh.last != k {
		if c = sh.m[k]; c == nil {
			c = sh.add(k)
		}
		sh.last, sh.lastC = k, c
	}
	c.n++
	c.endpoint = endpoint
	full = len(sh.m) >= PendingHashes
	sh.mu.Unlock()
	return full
}

// add returns the count of k, not counted yet: a new one, or OtherHashes'
// when its exchange and status have MaxHashes distinct hashes already.
func (sh *hashShard) add(k hashKey) *hashCount {
	es := hashKey{id: k.id, status: k.status}
	if sh.distinct[es] >= MaxHashes {
		k.hash = OtherHashes
		if c := sh.m[k]; c != nil {
			return c
		}
	} else {
		sh.distinct[es]++
	}
	c := &hashCount{}
	sh.m[k] = c
	return c
}

// drain returns the counts of sh and forgets them.
func (sh *hashShard) drain() []snapshots.ResponseHash {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	out := make([]snapshots.ResponseHash, 0, len(sh.m))
	for k, c := range sh.m {
		out = append(out, snapshots.ResponseHash{ExchangeID: k.id, Endpoint: c.endpoint, Status: k.status, Hash: k.hash, Count: c.n})
	}
	clear(sh.m)
	clear(sh.distinct)
	sh.lastC = nil
	return out
}

// ResponseHashes returns the answers counted by body hash so far (the
// answers outside the sample; with a HashSink, those not handed over yet), sorted by exchange, status and hash; nil
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
		for k, c := range sh.m {
			out = append(out, snapshots.ResponseHash{ExchangeID: k.id, Endpoint: c.endpoint, Status: k.status, Hash: k.hash, Count: c.n})
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b snapshots.ResponseHash) int {
		return cmp.Or(cmp.Compare(a.ExchangeID, b.ExchangeID), cmp.Compare(a.Status, b.Status), cmp.Compare(a.Hash, b.Hash))
	})
	return out
}
