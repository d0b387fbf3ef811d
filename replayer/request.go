package replayer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/replaykit/replay/internal/hopbyhop"
	"github.com/replaykit/replay/snapshots"
)

// template is a recorded request prepared once, so that sending it costs as
// little as possible.
type template struct {
	id       int64 // recorded exchange id
	endpoint string
	method   string
	url      *url.URL // target scheme and host, recorded path and query; shared, read-only
	uri      string   // path and query, for Result.URL
	host     string   // Host header
	header   http.Header
	body     []byte
	status   int               // recorded status
	start    time.Time         // recorded start, for the as-recorded model
	dur      time.Duration     // recorded duration
	h1       h1Template        // the request serialized, for the fast path
	h2       *h2Template       // recorded over HTTP/2 (gRPC among them): sent over HTTP/2; nil otherwise
	readErr  error             // it could not be read from the snapshot (Source): not sent
	redacted map[string]string // headers whose recorded value was redacted → the scheme kept (auth.go)
}

// computedHeaders are the request headers the client computes itself, so a
// recorded value is dropped like a hop-by-hop header.
var computedHeaders = [...]string{"Content-Length", "Host", "Traceparent", "Tracestate"}

// templateEndpoint is the endpoint of a recorded request as replayed: the
// recorded one, else computed (a missing method is GET).
func templateEndpoint(e *snapshots.Exchange) string {
	if e.Endpoint != "" {
		return e.Endpoint
	}
	method := e.Method
	if method == "" {
		method = http.MethodGet
	}
	return snapshots.EndpointOf(&snapshots.Exchange{Method: method, URL: e.URL, RequestHeader: e.RequestHeader, RequestBody: e.RequestBody,
		Direction: e.Direction, Messages: e.Messages}, nil)
}

func newTemplate(e *snapshots.Exchange, target *url.URL, override http.Header) (*template, error) {
	ru, err := url.Parse(e.URL)
	if err != nil {
		return nil, fmt.Errorf("replayer: exchange %d: url %q: %w", e.ID, e.URL, err)
	}
	u := *target
	u.Path = target.Path + ru.Path
	if ru.RawPath != "" {
		u.RawPath = target.Path + ru.RawPath
	}
	if u.Path == "" {
		u.Path = "/"
	}
	u.RawQuery = ru.RawQuery
	u.Fragment = ""
	method := e.Method
	if method == "" {
		method = http.MethodGet
	}
	endpoint := templateEndpoint(e)
	h2, body, err := newH2Template(e)
	if err != nil {
		return nil, err
	}
	t := &template{
		id:       e.ID,
		endpoint: endpoint,
		method:   method,
		url:      &u,
		uri:      u.RequestURI(),
		host:     target.Host,
		header:   requestHeader(e.RequestHeader, override),
		body:     body,
		h2:       h2,
		status:   e.Status,
		start:    e.Start,
		dur:      e.Duration,
		redacted: redactedHeaders(e.RequestHeader, override),
	}
	if h := override.Get("Host"); h != "" {
		t.host = h
	}
	t.h1 = newH1Template(t)
	return t, nil
}

// requestHeader returns the recorded header without hop-by-hop headers,
// computed ones and unsupplied redacted values, with override applied.
func requestHeader(rec, override http.Header) http.Header {
	h := make(http.Header, len(rec)+len(override))
	for k, vs := range rec {
		if !validHeaderName(k) {
			continue
		}
		var keep []string
		for _, v := range vs {
			if !isRedacted(v) && validHeaderValue(v) {
				keep = append(keep, v)
			}
		}
		if len(keep) > 0 {
			h[http.CanonicalHeaderKey(k)] = keep
		}
	}
	hopbyhop.Remove(h)
	for _, k := range computedHeaders {
		delete(h, k)
	}
	for k, vs := range override {
		if k == "Host" {
			continue
		}
		h[k] = vs
	}
	return h
}

// validHeaderName reports whether k is an HTTP token.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := range len(k) {
		c := k[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v can be sent as a header value.
func validHeaderValue(v string) bool {
	return !strings.ContainsAny(v, "\r\n\x00")
}

// canonical returns h with canonical keys, so that overrides replace
// recorded values whatever their spelling.
func canonical(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		ck := http.CanonicalHeaderKey(k)
		out[ck] = append(out[ck], vs...)
	}
	return out
}

// newTraceparent returns a fresh W3C traceparent (version 00, sampled) and
// its trace id. It is on every request's path: two hex digits at a time
// from a table.
func newTraceparent() (tp, traceID string, id int64) {
	var b [55]byte
	copy(b[:], "00-")
	hi, lo, span := rand.Uint64(), rand.Uint64(), rand.Uint64()|1
	if hi == 0 && lo == 0 {
		lo = 1
	}
	putHex64(b[3:19], hi)
	putHex64(b[19:35], lo)
	b[35] = '-'
	putHex64(b[36:52], span)
	copy(b[52:], "-01")
	tp = string(b[:])
	id = int64(lo >> 1)
	if id == 0 {
		id = 1
	}
	return tp, tp[3:35], id
}

// hexPairs holds the two lower-case hex digits of every byte value.
const hexPairs = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" +
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f" +
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f" +
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f" +
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f" +
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf" +
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf" +
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"

// putHex64 writes v's 16 lower-case hex digits, most significant first,
// into b[:16].
func putHex64(b []byte, v uint64) {
	_ = b[15]
	for i := 14; i >= 0; i -= 2 {
		j := (v & 0xff) * 2
		b[i], b[i+1] = hexPairs[j], hexPairs[j+1]
		v >>= 8
	}
}

// errNotSent is the error of a request the open model could not send before
// the run's end plus the timeout, because the target held every connection.
const errNotSent = "not sent: target stalled"

// send replays t and fills res (everything but Phase, Slice and Intended).
// It reports whether the run's own cancellation cut the request short, in
// which case res is not a measurement.
func (r *Replayer) send(ctx context.Context, c *conn, t *template, res *snapshots.Result) (canceled bool) {
	return r.sendAs(ctx, c, t, res, r.counting())
}

// sendAs is send, telling the SQL counter about the request only when
// counting (a warm-up request's statements belong to no request).
func (r *Replayer) sendAs(ctx context.Context, c *conn, t *template, res *snapshots.Result, counting bool) (canceled bool) {
	if t.readErr != nil {
		r.begin(t, res, false)
		res.Sent, res.Done = time.Now(), time.Now()
		res.Error = t.readErr.Error()
		return false
	}
	if r.stage != nil {
		return r.sendStaged(ctx, c, -1, t, res, counting)
	}
	out := r.begin(t, res, counting)
	tap := r.tap(c, t, res.Phase)
	var err error
	if t.h2 != nil {
		res.Status, res.Bytes, err = r.sendH2(ctx, t, out.tp, res, tap)
	} else if r.raw {
		res.Sent = time.Now()
		res.Status, res.Bytes, err = c.roundTrip(ctx, r.addr, &t.h1, out.tp, res.Sent, res.Sent.Add(r.timeout), tap)
		res.Done = time.Now()
	} else {
		res.Status, res.Bytes, err = r.sendNetHTTP(ctx, t, out.tp, res, tap)
	}
	canceled = r.end(ctx, out, err)
	r.captured(t, res, tap, canceled)
	r.refused(t, res)
	return canceled
}

// outgoing is a request between begin and end; the open model's scheduler
// begins a request and writes it, its worker reads the response and ends
// it.
type outgoing struct {
	res      *snapshots.Result
	tp       string // traceparent
	id       int64  // for the SQL counter
	counting bool
	w        window
}

// begin fills res for t (everything but Phase, Slice, Intended, Sent, Done
// and the response) and, when counting, tells the SQL counter and the
// upstream counter that the request starts.
func (r *Replayer) begin(t *template, res *snapshots.Result, counting bool) outgoing {
	tp, traceID, id := newTraceparent()
	res.ExchangeID = t.id
	res.Endpoint = t.endpoint
	res.Method = t.method
	res.URL = t.uri
	res.RecordedStatus = t.status
	res.TraceID = traceID
	out := outgoing{res: res, tp: tp, id: id, counting: counting}
	if counting {
		out.w = r.alone.begin()
		if r.cfg.SQL != nil {
			r.cfg.SQL.Begin(id, traceID)
		}
		if r.cfg.Upstream != nil {
			r.cfg.Upstream.Begin(id, traceID)
		}
	}
	return out
}

// end closes a request that ended with err: it collects its SQL when
// counting and sets its error. It reports whether the run's own
// cancellation cut the request short, in which case the result is not a
// measurement.
func (r *Replayer) end(ctx context.Context, out outgoing, err error) (canceled bool) {
	res := out.res
	if out.counting {
		alone := r.alone.end(out.w)
		if r.cfg.SQL != nil {
			res.SQL = r.cfg.SQL.End(out.id)
			res.SQLCounted = alone || r.cfg.SQLTraced
		}
		if r.cfg.Upstream != nil {
			var complete bool
			res.Upstream, complete = r.cfg.Upstream.End(out.id)
			res.UpstreamCounted = alone || complete
		}
	}
	if err != nil {
		if ended(ctx) {
			return true
		}
		res.Status = 0
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			res.Error = fmt.Sprintf("timeout: no complete response within %s", r.timeout)
		} else {
			res.Error = err.Error()
		}
	}
	return false
}

// sendNetHTTP sends t through net/http (https targets), the answer read
// through tap when set; it sets res.Sent and res.Done.
func (r *Replayer) sendNetHTTP(ctx context.Context, t *template, tp string, res *snapshots.Result, tap *bodyTap) (status int, n int64, err error) {
	h := make(http.Header, len(t.header)+1)
	for k, vs := range t.header {
		h[k] = vs
	}
	h["Traceparent"] = []string{tp}
	req := http.Request{
		Method:        t.method,
		URL:           t.url,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Host:          t.host,
		ContentLength: int64(len(t.body)),
	}
	if len(t.body) > 0 {
		body := t.body
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	rctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res.Sent = time.Now()
	resp, err := r.transport.RoundTrip(req.WithContext(rctx))
	if err == nil {
		status = resp.StatusCode
		var w io.Writer = io.Discard
		if tap != nil {
			tap.headerOf(resp.Header)
			w = tap
		}
		n, err = io.Copy(w, resp.Body)
		resp.Body.Close()
	}
	res.Done = time.Now()
	return status, n, err
}

// aloneTracker tells whether a request had the target to itself: no other
// request in flight when it started, and none started before it ended.
type aloneTracker struct {
	mu       sync.Mutex
	inflight int
	epoch    int64
}

// window is one request's view of the tracker.
type window struct {
	alone bool
	epoch int64
}

func (a *aloneTracker) begin() window {
	a.mu.Lock()
	a.inflight++
	a.epoch++
	w := window{alone: a.inflight == 1, epoch: a.epoch}
	a.mu.Unlock()
	return w
}

func (a *aloneTracker) end(w window) bool {
	a.mu.Lock()
	alone := w.alone && a.epoch == w.epoch
	a.inflight--
	a.mu.Unlock()
	return alone
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// counting reports whether requests are counted: a SQL or upstream
// counter is told of them.
func (r *Replayer) counting() bool { return r.cfg.SQL != nil || r.cfg.Upstream != nil }

// ended reports whether ctx is canceled or past its deadline. The second is
// not the same: a dial or a read bounded by ctx's deadline can fail with
// "i/o timeout" a moment before ctx's own timer marks it done, and such a
// request was cut by the end of the run, not timed out by the target.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
