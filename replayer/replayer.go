package replayer

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// ResultSink receives every replayed request as it completes;
// *snapshots.RunWriter is one. Add must be safe for concurrent use and must
// not block for long: it is called from the load generator's workers.
type ResultSink interface {
	Add(r *snapshots.Result)
}

// ResultCopier is a ResultSink that keeps no pointer to a result, nor
// changes it, once Add returns (it copies what it needs; it may keep the
// strings a result names). The event loops then reuse a virtual user's
// result for its next request instead of allocating one each time.
type ResultCopier interface {
	ResultSink
	CopiesResults()
}

// SQLCounter is told when a replayed request starts and ends, and returns the
// SQL statements attributed to it; *sqlcount.Proxy is one.
type SQLCounter interface {
	Begin(id int64, traceID string)
	End(id int64) []snapshots.SQLCount
}

// UpstreamCounter is told when a replayed request starts and ends, and
// returns the calls to mocked services attributed to it, and whether every
// call made meanwhile was attributed (so none of its own was missed);
// *mock.Server is one.
type UpstreamCounter interface {
	Begin(id int64, traceID string)
	End(id int64) (calls []snapshots.UpstreamCount, complete bool)
}

// MissCounter counts the requests a mock could not answer; *mock.Server is
// one.
type MissCounter interface {
	Misses() int64
}

// Defaults for a zero Config.
const (
	// DefaultTimeout bounds one request, from its send to the last byte of
	// its response.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxInFlight caps the requests in flight, and so the connections
	// to the target.
	DefaultMaxInFlight = 1000
)

// Redacted is the value the recorder stores in place of a redacted header.
// Such a header is dropped when replayed, unless Config.Header supplies it.
const Redacted = snapshots.Redacted

// Config configures a Replayer. The zero value of every field but Target and
// Exchanges is useful.
type Config struct {
	// Target is the base URL requests go to, e.g. "http://127.0.0.1:8080";
	// its scheme and host replace the recorded ones. A path prefix, if any,
	// is prepended to the recorded paths.
	Target string
	// Exchanges are the recorded inbound exchanges to replay, in the order
	// they are to be sent (as snapshots.Snapshot.Exchanges yields them).
	// Outbound exchanges are ignored.
	Exchanges []*snapshots.Exchange
	// Source, when set, gives the requests to replay instead of Exchanges,
	// read from the snapshot as the load needs them (bounded memory
	// whatever the snapshot's size); its endpoints are the ones it
	// selected, and Endpoints is ignored.
	Source *Source
	// Endpoints, when not empty, selects the exchanges to replay: an entry
	// is an endpoint ("GET /orders/{id}"), a glob over endpoints in which
	// "*" matches any run of characters and "?" one ("GET /orders*"), or a
	// path glob matched against the endpoint's path ("/orders/*"). An
	// endpoint with an operation ("POST /graphql {allBooks}") is selected by
	// its full name, by a glob over it, or by any entry naming no operation
	// that selects "POST /graphql".
	Endpoints []string
	// AllowTruncated replays requests whose body was cut at recording
	// (snapshots.Exchange.RequestTruncated) as recorded, cut, counting them
	// per endpoint (Replayer.Truncated); when false, New refuses them with
	// a *TruncatedError.
	AllowTruncated bool
	// Header is added to every request, replacing recorded values of the
	// same name. It may supply values of redacted headers. A "Host" entry
	// sets the Host header; otherwise it is the target's host.
	Header http.Header
	// Timeout bounds each request, from send to the last byte of the
	// response; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxInFlight caps the requests in flight and the connections to the
	// target; zero means DefaultMaxInFlight. The closed model's virtual
	// users and the open model's workers never exceed it.
	MaxInFlight int
	// SQL, when set, counts the SQL statements of each request.
	SQL SQLCounter
	// Upstream, when set, counts the calls to mocked services of each
	// request (Result.Upstream); a request's count holds
	// (Result.UpstreamCounted) when it was alone in flight or every call
	// made meanwhile could be attributed.
	Upstream UpstreamCounter
	// SQLTraced says the target propagates each request's traceparent into
	// its SQL comments (sqlcommenter), so that the counter attributes
	// statements exactly under any concurrency. When false, a load-phase
	// request's statements count (Result.SQLCounted) only if no other
	// request was in flight at any time during it.
	SQLTraced bool
	// NetHTTP sends plain-http requests through Go's net/http client instead
	// of replay's own HTTP/1.1 client (which costs a fraction of the CPU per
	// request); https targets always use net/http. Requests recorded over
	// HTTP/2 then go through golang.org/x/net/http2's transport rather
	// than replay's own HTTP/2 client.
	NetHTTP bool
	// TLS configures connections to an https target; nil uses the system
	// roots.
	TLS *tls.Config
	// Conns is the number of HTTP/2 connections to the target that the
	// requests recorded over HTTP/2 (gRPC calls among them) share as
	// streams; zero means DefaultConns. Requests recorded over HTTP/1.1
	// use a connection per request in flight.
	Conns int
	// Logger receives diagnostics; nil discards.
	Logger *slog.Logger

	// Responses, when set, captures the target's answers to the explain
	// phase's and the load's requests (warm-ups are not captured): per
	// endpoint, the first SampleExchanges distinct recorded exchanges of
	// the request sequence (the explain phase's first, then the load's, so
	// two Replayers of one comparison sample the same exchanges), and of
	// each its first SampleAnswers answers, go to Responses with their
	// headers of the set (DefaultResponseHeaders and ResponseHeaders) and
	// body (decoded, at most SampleBody bytes); every other answer is
	// counted by the hash of its body (ResponseHashes). Nil captures
	// nothing and costs nothing.
	Responses ResponseSink
	// SampleExchanges is the number of exchanges sampled per endpoint;
	// zero means DefaultSampleExchanges, a negative value none (hashes
	// only).
	SampleExchanges int
	// SampleBody is the most decoded body bytes a sample keeps; zero means
	// DefaultSampleBody.
	SampleBody int
	// ResponseHeaders are kept in samples on top of
	// DefaultResponseHeaders.
	ResponseHeaders []string
	// Messages decodes the messages of sampled gRPC answers (protobuf)
	// into the JSON documents compared; nil decodes them by field number.
	Messages MessageDecoder

	// Shard, when set, sends only shard K of N of every plan (see Shard).
	Shard Shard

	// State rewrites requests just before they are sent: fresh tokens,
	// values correlated from earlier answers, moved timestamps (stage.go);
	// the zero value sends them as recorded.
	State StateConfig
}

// Replayer sends recorded requests to one target. Run may be called
// repeatedly (each call a slice of a comparison); the position in the
// request sequence carries over from one call to the next. A Replayer must
// not run two plans at once.
type Replayer struct {
	cfg       Config
	target    *url.URL
	seq       requestSeq
	transport *http.Transport
	h2        *h2Client // requests recorded over HTTP/2 (h2.go)
	raw       bool      // plain http: the fast HTTP/1.1 path (h1.go)
	addr      string    // host:port to dial on the fast path
	timeout   time.Duration
	maxInfl   int
	log       *slog.Logger

	// cursor is the number of requests of the sequence taken so far; request
	// g of the sequence is seq.at(g % seq.len()), pass g / len.
	cursor atomic.Int64
	// pool keeps idle fast-path connections between calls of Run.
	pool connPool
	// running guards against concurrent Run calls.
	running atomic.Bool

	// ids are the exchange IDs of a sequence in memory, for Replays.
	ids     map[int64]bool
	idsOnce sync.Once

	// truncated counts the requests replayed cut, per endpoint.
	truncated map[string]int64

	// alone tells whether a request had the target to itself (for
	// SQLCounted); used only with a counter.
	alone aloneTracker

	// capture keeps the target's answers (Config.Responses); nil: off.
	capture *capture

	// started: Config.Shard.Start was called; t0 is the start time it
	// gave, for the load call about to start (shard.go).
	started bool
	t0      time.Time

	// stage rewrites requests before they are sent (stage.go); nil: off.
	stage *stage
	// redactedRefused counts requests with a redacted credential answered
	// 401 or 403 (auth.go).
	redactedRefused atomicCount

	// The closed model's event loops (evloop_linux.go): noLoop keeps it on
	// goroutines; h1Only (set once) says the requests are HTTP/1.1;
	// loopServed counts the requests the loops completed.
	noLoop     bool
	h1Once     sync.Once
	h1Only     bool
	loopServed atomic.Int64
}

// ErrNoRequests is returned by New when no recorded inbound request is left
// to replay (none recorded, or none matching Config.Endpoints).
var ErrNoRequests = errors.New("no recorded inbound request to replay")

// ErrBusy is returned by Run when the Replayer is already running a plan.
var ErrBusy = errors.New("replayer is already running")

// New validates cfg and prepares a request template for every exchange.
func New(cfg Config) (*Replayer, error) {
	u, err := parseTarget(cfg.Target)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("replayer: negative timeout %s", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxInFlight < 0 {
		return nil, fmt.Errorf("replayer: negative max in-flight %d", cfg.MaxInFlight)
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.Conns < 0 {
		return nil, fmt.Errorf("replayer: negative number of connections %d", cfg.Conns)
	}
	if cfg.Conns == 0 {
		cfg.Conns = DefaultConns
	}
	if cfg.SampleBody < 0 {
		return nil, fmt.Errorf("replayer: negative sample body limit %d", cfg.SampleBody)
	}
	if err := cfg.Shard.check(); err != nil {
		return nil, err
	}
	header := canonical(cfg.Header)
	var seq requestSeq
	var truncated map[string]int64
	if cfg.Source != nil {
		seq, truncated = newSourceSeq(cfg.Source, u, header), cfg.Source.Truncated()
	} else if seq, truncated, err = templates(cfg, u, header); err != nil {
		return nil, err
	}
	if truncated != nil && !cfg.AllowTruncated {
		return nil, fmt.Errorf("replayer: %w", &TruncatedError{Endpoints: truncated})
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	r := &Replayer{
		raw:       u.Scheme == "http" && !cfg.NetHTTP,
		addr:      addr,
		cfg:       cfg,
		target:    u,
		seq:       seq,
		transport: newTransport(cfg),
		h2:        newH2Client(cfg.Conns, u, cfg.TLS, cfg.NetHTTP),
		timeout:   cfg.Timeout,
		maxInfl:   cfg.MaxInFlight,
		log:       logger,
		pool:      connPool{max: cfg.MaxInFlight, slack: cfg.Timeout / 1000},
		truncated: truncated,
		capture:   newCapture(cfg),
	}
	if r.stage, err = newStage(r); err != nil {
		return nil, err
	}
	return r, nil
}

// newTransport returns an HTTP client transport sized for the concurrency:
// Go's default of 2 idle connections per host loses most of a generator's
// throughput.
func newTransport(cfg Config) *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil, // never the environment's proxy: the target is addressed directly
		DialContext:           d.DialContext,
		TLSClientConfig:       cfg.TLS,
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   cfg.MaxInFlight,
		MaxConnsPerHost:       cfg.MaxInFlight,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // send what was recorded, count bytes as sent on the wire
		ExpectContinueTimeout: time.Second,
	}
}

func parseTarget(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("replayer: no target URL")
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("replayer: target %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("replayer: target %q: want an http:// or https:// URL with a host", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("replayer: target %q: a query or fragment is not allowed", s)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// Target returns the target URL.
func (r *Replayer) Target() string { return r.target.String() }

// Requests returns the number of recorded requests in one pass, after
// filtering.
func (r *Replayer) Requests() int { return r.seq.len() }

// Endpoints returns the endpoints replayed, sorted.
func (r *Replayer) Endpoints() []string {
	m := map[string]bool{}
	for _, i := range r.seq.firsts() {
		m[r.seq.endpoint(i)] = true
	}
	return sortedKeys(m)
}

// ExchangeIDs returns the recorded IDs of the exchanges replayed, after
// filtering, in the order they are sent.
func (r *Replayer) ExchangeIDs() []int64 {
	ids := make([]int64, r.seq.len())
	for i := range ids {
		ids[i] = r.seq.id(i)
	}
	return ids
}

// Replays reports whether the recorded exchange id is one of the requests
// replayed, after filtering.
func (r *Replayer) Replays(id int64) bool {
	if q, ok := r.seq.(*sourceSeq); ok {
		return q.src.Contains(id)
	}
	r.idsOnce.Do(func() {
		r.ids = make(map[int64]bool, r.seq.len())
		for i := range r.seq.len() {
			r.ids[r.seq.id(i)] = true
		}
	})
	return r.ids[id]
}

// Position returns how many requests of the sequence Run has taken so far
// (across calls); the next one is request Position() % Requests().
func (r *Replayer) Position() int64 { return r.cursor.Load() }

// templates prepares a template for every inbound exchange of
// cfg.Exchanges that cfg.Endpoints selects, and counts the truncated ones.
func templates(cfg Config, u *url.URL, header http.Header) (sliceSeq, map[string]int64, error) {
	filter, err := newEndpointFilter(cfg.Endpoints)
	if err != nil {
		return nil, nil, err
	}
	var tmpls sliceSeq
	seen := map[string]bool{}
	for _, e := range cfg.Exchanges {
		if e == nil || (e.Direction != "" && e.Direction != snapshots.Inbound) {
			continue
		}
		t, err := newTemplate(e, u, header)
		if err != nil {
			return nil, nil, err
		}
		seen[t.endpoint] = true
		if !filter.match(t.endpoint) {
			continue
		}
		tmpls = append(tmpls, t)
	}
	if len(tmpls) == 0 {
		if len(cfg.Endpoints) > 0 && len(seen) > 0 {
			return nil, nil, fmt.Errorf("replayer: %w: --endpoint %s matches none of %s", ErrNoRequests,
				strings.Join(cfg.Endpoints, ", "), strings.Join(sortedKeys(seen), ", "))
		}
		return nil, nil, fmt.Errorf("replayer: %w", ErrNoRequests)
	}
	truncated, err := Truncated(cfg.Exchanges, cfg.Endpoints)
	return tmpls, truncated, err
}

// Close closes idle connections to the target. Connections stay open
// between calls of Run (each call a slice of a comparison), so that no slice
// pays for connecting.
func (r *Replayer) Close() error {
	r.transport.CloseIdleConnections()
	r.h2.closeIdle()
	r.pool.closeAll()
	return nil
}
