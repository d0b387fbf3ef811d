package replayer

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// sendAt sends t, the request at sequence position g, through the stage
// when there is one.
func (r *Replayer) sendAt(ctx context.Context, c *conn, g int64, t *template, res *snapshots.Result) (canceled bool) {
	if r.stage == nil || t.readErr != nil {
		return r.send(ctx, c, t, res)
	}
	return r.sendStaged(ctx, c, g, t, res, r.counting())
}

// staged is a request as the stage rewrote it.
type staged struct {
	url    *url.URL
	header http.Header
	body   []byte
}

// liveAnswer is a staged request's answer: what the stage needs of it.
type liveAnswer struct {
	status int
	n      int64
	header http.Header
	body   []byte // kept only for a source
}

// maxSourceBody bounds the answer body a source keeps to take values from.
const maxSourceBody = 1 << 20

// sendStaged sends t at sequence position g (negative: outside the
// sequence, the explain phase) rewritten by the stage, through net/http
// (over HTTP/2 when recorded so).
func (r *Replayer) sendStaged(ctx context.Context, c *conn, g int64, t *template, res *snapshots.Result, counting bool) (canceled bool) {
	s := r.stage
	pos, key := s.position(g, t)
	req := &staged{url: t.url, header: t.header, body: t.body}
	pend := s.correlate(ctx, key, pos, req)
	if ctx.Err() != nil {
		return true
	}
	s.shift.apply(req)
	tok, hasTok := s.token(ctx, t, req)
	out := r.begin(t, res, counting)
	res.URL = req.url.RequestURI()
	tap := r.tap(c, t, res.Phase)
	keep := s.links != nil && len(s.links.sources[pos]) > 0
	ans, err := r.stageRoundTrip(ctx, t, req, out.tp, res, tap, keep)
	if err == nil && refusedToken(t, ans, res) && hasTok {
		s.cfg.Tokens.Invalidate(tok)
		s.tokenRetries.Add(1)
		tap.restart()
		if tok, hasTok = s.token(ctx, t, req); hasTok {
			ans, err = r.stageRoundTrip(ctx, t, req, out.tp, res, tap, keep)
		}
	}
	res.Status, res.Bytes = ans.status, ans.n
	canceled = r.end(ctx, out, err)
	r.captured(t, res, tap, canceled)
	r.refused(t, res)
	if keep {
		s.answered(key, pos, ans)
	}
	s.settle(pos, res, pend)
	return canceled
}

// position returns the recorded position of t in the pass and the key of
// its live values (pass × requests + position); -1 outside the sequence.
func (s *stage) position(g int64, t *template) (pos int, key int64) {
	if s.links == nil {
		return -1, -1
	}
	if g < 0 { // the explain phase
		return s.posOf(t.id), -1
	}
	n := int64(s.r.seq.len())
	pos = int(g % n)
	if s.r.seq.id(pos) != t.id { // the as-recorded model picks by start
		pos = s.posOf(t.id)
	}
	return pos, g/n*n + int64(pos)
}

// token puts a token on req when the stage has a source, and returns it.
func (s *stage) token(ctx context.Context, t *template, req *staged) (string, bool) {
	if s.cfg.Tokens == nil || (s.cfg.TokenHeader == "" && !t.credential()) {
		return "", false
	}
	tok, err := s.cfg.Tokens.Token(ctx)
	if err != nil {
		s.tokenErrors.Add(1)
		s.tokenErr.set(err.Error())
		return "", false
	}
	h := req.header.Clone()
	s.placeToken(h, t, tok)
	req.header = h
	return tok, true
}

// stageRoundTrip sends req through net/http and reads the whole answer
// (through tap when set); keep keeps its headers and body for dependents.
// A request recorded over HTTP/2 goes over HTTP/2 (stageRoundTripH2).
func (r *Replayer) stageRoundTrip(ctx context.Context, t *template, req *staged, tp string, res *snapshots.Result, tap *bodyTap, keep bool) (liveAnswer, error) {
	if t.h2 != nil {
		return r.stageRoundTripH2(ctx, t, req, tp, res, tap)
	}
	h := make(http.Header, len(req.header)+1)
	for k, vs := range req.header {
		h[k] = vs
	}
	h["Traceparent"] = []string{tp}
	hr := &http.Request{Method: t.method, URL: req.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Host: t.host, ContentLength: int64(len(req.body))}
	if len(req.body) > 0 {
		body := req.body
		hr.Body = io.NopCloser(bytes.NewReader(body))
		hr.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	rctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if res.Sent.IsZero() {
		res.Sent = time.Now()
	}
	var ans liveAnswer
	resp, err := r.transport.RoundTrip(hr.WithContext(rctx))
	if err == nil {
		ans.status = resp.StatusCode
		var w io.Writer = io.Discard
		if tap != nil {
			tap.headerOf(resp.Header)
			w = tap
		}
		var buf bytes.Buffer
		if keep {
			ans.header = resp.Header
			w = io.MultiWriter(w, &limitedBuffer{b: &buf, max: maxSourceBody})
		}
		ans.n, err = io.Copy(w, resp.Body)
		resp.Body.Close()
		ans.body = buf.Bytes()
	}
	res.Done = time.Now()
	return ans, err
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
