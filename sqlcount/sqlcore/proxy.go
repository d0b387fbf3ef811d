package sqlcore

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// Config configures a Proxy. Only Upstream is required.
type Config struct {
	// Upstream is host:port of the real database server.
	Upstream string
	// Protocol names the wire protocol: "" or "postgres" for PostgreSQL,
	// "mysql" for MySQL and MariaDB. Package sqlcount picks the Wire from it;
	// this package only names it in logs.
	Protocol string
	// OnStatement is called with every completed statement (its ExchangeID
	// set when it was attributed to a request). It is called from the
	// proxy's connection goroutines, before the client sees the statement's
	// completion, so it must be quick: queue, don't write. Nil ignores
	// statements (they are still counted in Stats and by End).
	OnStatement func(*snapshots.Statement)
	// Logger receives connection problems (malformed messages, unreachable
	// upstream) with their reason; nil discards them.
	Logger *slog.Logger
	// DialTimeout bounds connecting to Upstream; zero means 10s.
	DialTimeout time.Duration
	// ClientTLS, when set, is offered to clients, who may then talk to the
	// proxy in TLS (for apps that insist on sslmode=require or verify-full,
	// or MySQL's ssl-mode=REQUIRED). Nil offers no TLS: clients that prefer
	// TLS go on without it.
	ClientTLS *tls.Config
	// StartupTimeout closes a client that has not finished its startup and
	// authentication (PostgreSQL's first ReadyForQuery, MySQL's OK to the
	// handshake) this long after it connected; zero means 10s (a real client needs milliseconds),
	// negative never.
	StartupTimeout time.Duration
	// IdleTimeout closes a client connection with no statement in progress
	// and no traffic either way for this long (Stats.IdleClosed); zero or
	// negative never. Pools keep idle connections for minutes: see
	// listen.DefaultSQLIdleTimeout.
	IdleTimeout time.Duration
	// UpstreamTLS, when set, is required of the server: every connection to
	// it is encrypted, and a server that declines fails the client's
	// connection with the reason. Nil talks to the server in the clear.
	UpstreamTLS *tls.Config
	// KeepUnattributed keeps the per-millisecond histogram of statements
	// attributed to no request (Unattributed), which a replay's estimates
	// need: an entry for every millisecond in which such a statement
	// started, about 40 bytes each, at most MaxUnattributedBins of them
	// (wider intervals past that); a recording, which never reads it,
	// leaves it off.
	KeepUnattributed bool
	// NoEventLoops relays every connection with two goroutines, never an
	// event loop (on Linux, where loops are the default): for tests and
	// comparisons of the two relays.
	NoEventLoops bool
	// EventLoops is how many event loops relay the connections (on Linux).
	// 0 picks one for every four Ps, at least one (none with a single P),
	// as suits a counter that shares its process with a replayer;
	// OwnProcess sets one per P for a process that only counts.
	EventLoops int
	// DecodeAfterRelay has an event loop decode what the server sends after
	// relaying it to the client, not before: the client gets its answer a
	// decode sooner, but may act on it before the statement is counted, so
	// a counter whose statements are attributed to requests (OnStatement,
	// replays) leaves it off. Totals and times are the same either way.
	DecodeAfterRelay bool
	// LoopThreads keeps each event loop on an OS thread of its own, as a
	// proxy's threads are: a loop then never moves between threads when
	// it comes back from epoll_wait. Measured better for a process that
	// only counts (OwnProcess sets it), where nothing else wants the
	// threads.
	LoopThreads bool
}

// Proxy is a wire-protocol proxy that counts, times, fingerprints and
// attributes every statement that passes through it; its Wire knows the
// protocol. Its methods are safe for concurrent use.
type Proxy struct {
	cfg            Config // with defaults applied
	wire           Wire
	upstream       string
	onStatement    func(*snapshots.Statement)
	log            *slog.Logger
	dialTimeout    time.Duration
	clientTLS      *tls.Config
	upstreamTLS    *tls.Config
	startupTimeout time.Duration
	idleTimeout    time.Duration

	fps           *fingerprints
	tracker       *tracker
	unattr        unattributed
	keepUnattr    bool
	statements    atomic.Int64
	errors        atomic.Int64
	connSeq       atomic.Int64
	conns         atomic.Int64 // connections past their startup, cancel requests not counted
	upErrors      atomic.Int64 // connections the upstream server could not be reached for
	idleClosed    atomic.Int64
	startupClosed atomic.Int64
	clients       clients
	bufs          sync.Pool

	goroutinesOnly bool // Config.NoEventLoops
}

// Stats are the totals of a proxy since it was made. A statement the server
// rejected (it ended in an ErrorResponse) counts in Errors, not in
// Statements, Count or Total.
type Stats struct {
	// Statements is the number of statements completed without error.
	Statements int64
	// Connections is the number of client connections whose startup the
	// proxy read (cancel requests not counted), relayed or not.
	Connections int64
	// Clients holds the totals per application_name the clients gave at
	// startup, by name: which programs used the proxy.
	Clients []ClientStats
	// Errors is the number of statements the server rejected.
	Errors int64
	// UpstreamErrors is the number of client connections the proxy could
	// not open to the server (dial or TLS failed): a database that was down.
	UpstreamErrors int64
	// IdleClosed is the number of client connections closed for idling
	// (Config.IdleTimeout), StartupClosed of those closed for not
	// authenticating in time (Config.StartupTimeout).
	IdleClosed, StartupClosed int64
	// Fingerprints holds the totals per fingerprint, the most frequent
	// first (ties in fingerprint order).
	Fingerprints []FingerprintStats
}

// FingerprintStats are the totals of one fingerprint.
type FingerprintStats struct {
	// Fingerprint is the folded statement text.
	Fingerprint string
	// Count is the number of statements with this fingerprint that
	// completed without error.
	Count int64
	// Errors is the number of statements with this fingerprint that the
	// server rejected.
	Errors int64
	// Total is the summed duration of those completed, and Mean
	// Total/Count (zero when Count is).
	Total time.Duration
	Mean  time.Duration
}

// New returns a proxy to cfg.Upstream speaking the protocol of w.
func New(cfg Config, w Wire) (*Proxy, error) {
	if cfg.Upstream == "" {
		return nil, errors.New("sqlcount: no upstream server given")
	}
	if _, _, err := net.SplitHostPort(cfg.Upstream); err != nil {
		return nil, fmt.Errorf("sqlcount: upstream %q: want host:port: %w", cfg.Upstream, err)
	}
	if w == nil {
		return nil, errors.New("sqlcount: no wire protocol given")
	}
	return NewUnchecked(cfg, w), nil
}

// NewUnchecked is New without the checks of cfg.Upstream: for decoding
// streams without a server (fuzzing, benchmarks of a decoder).
func NewUnchecked(cfg Config, w Wire) *Proxy {
	p := &Proxy{
		wire:           w,
		goroutinesOnly: cfg.NoEventLoops,
		upstream:       cfg.Upstream,
		onStatement:    cfg.OnStatement,
		log:            cfg.Logger,
		dialTimeout:    cfg.DialTimeout,
		clientTLS:      cfg.ClientTLS,
		upstreamTLS:    cfg.UpstreamTLS,
		keepUnattr:     cfg.KeepUnattributed,
		startupTimeout: cfg.StartupTimeout,
		idleTimeout:    cfg.IdleTimeout,
		fps:            newFingerprints(w.Fingerprint),
		tracker:        newTracker(),
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.dialTimeout <= 0 {
		p.dialTimeout = 10 * time.Second
	}
	switch {
	case p.startupTimeout == 0:
		p.startupTimeout = 10 * time.Second
	case p.startupTimeout < 0:
		p.startupTimeout = 0
	}
	p.bufs.New = func() any { b := make([]byte, relayBufferSize); return &b }
	p.cfg = cfg
	p.cfg.DialTimeout = p.dialTimeout
	p.cfg.StartupTimeout = p.startupTimeout
	p.cfg.Logger = p.log
	return p
}

// Serve accepts client connections on l and proxies them to the upstream
// server until ctx is done or l is closed; then it closes the connections
// it accepted and returns once they are all done (no OnStatement call
// happens after it returns). It returns nil on such a shutdown.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()

	loops := newLoops(p)
	var wg sync.WaitGroup
	var err error
	backoff := 5 * time.Millisecond
	for {
		c, aerr := l.Accept()
		if aerr != nil {
			if ctx.Err() != nil || errors.Is(aerr, net.ErrClosed) {
				break
			}
			if errors.Is(aerr, syscall.EMFILE) || errors.Is(aerr, syscall.ENFILE) || errors.Is(aerr, syscall.ECONNABORTED) {
				p.log.Warn("sqlcount: accept", "err", aerr)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			err = fmt.Errorf("sqlcount: accept: %w", aerr)
			break
		}
		backoff = 5 * time.Millisecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.handle(ctx, c, loops)
		}()
	}
	cancel()
	wg.Wait()
	loops.close()
	return err
}

// Begin tells the proxy that the inbound request id is in flight; traceID
// is the W3C trace id it carries (32 hex digits), or "".
func (p *Proxy) Begin(id int64, traceID string) { p.tracker.Begin(id, traceID) }

// End tells the proxy that the request id has ended and returns the
// statements attributed to it, per fingerprint. Statements that complete
// after End are not attributed to it.
func (p *Proxy) End(id int64) []snapshots.SQLCount {
	counts, _ := p.tracker.End(id)
	return counts
}

// Stats returns the totals so far.
func (p *Proxy) Stats() Stats {
	st := Stats{Statements: p.statements.Load(), Errors: p.errors.Load(), Connections: p.conns.Load(), Clients: p.clients.all(), UpstreamErrors: p.upErrors.Load(),
		IdleClosed: p.idleClosed.Load(), StartupClosed: p.startupClosed.Load()}
	for _, fp := range p.fps.all() {
		n, e := fp.count.Load(), fp.errors.Load()
		if n == 0 && e == 0 {
			continue
		}
		f := FingerprintStats{Fingerprint: fp.text, Count: n, Errors: e, Total: time.Duration(fp.total.Load())}
		if n > 0 {
			f.Mean = f.Total / time.Duration(n)
		}
		st.Fingerprints = append(st.Fingerprints, f)
	}
	slices.SortFunc(st.Fingerprints, func(a, b FingerprintStats) int {
		if c := cmp.Compare(b.Count+b.Errors, a.Count+a.Errors); c != 0 {
			return c
		}
		return cmp.Compare(a.Fingerprint, b.Fingerprint)
	})
	return st
}
