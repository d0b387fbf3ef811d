package recorder

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/replaykit/replay/snapshots"
)

// outboundCall is one outbound request being recorded.
type outboundCall struct {
	o       *Outbound
	ctx     context.Context // the app's request
	e       snapshots.Exchange
	reqBody *sharedCapture
	eof     eofReader
	res     outboundBody
	// A gRPC call's taps, and its response for the trailers.
	reqTap, resTap *grpcTap
	resp           *http.Response
}

// roundTrip sends one request of the app upstream and arranges for the
// exchange to be recorded when the response body ends. It never returns an
// error: an upstream that cannot be reached gets the app a 502.
func (o *Outbound) roundTrip(req *http.Request, pctx *goproxy.ProxyCtx) (*http.Response, error) {
	c := &outboundCall{o: o, ctx: req.Context()}
	c.e.Start = time.Now()
	o.sink.CountSeen(snapshots.Outbound)
	o.calls.Add(1)
	c.e.ID = o.sink.NewID()
	c.e.Direction = snapshots.Outbound

	scheme := req.URL.Scheme
	if scheme != "https" {
		scheme = "http"
	}
	target, _ := pctx.UserData.(connectTarget)
	u := *req.URL
	u.Scheme, u.User, u.Fragment, u.RawFragment = scheme, nil, "", ""
	if u.Host == "" {
		u.Host = req.Host
	}
	service := string(target)
	if service == "" {
		service = withPort(u.Host, scheme)
	}
	service = strings.ToLower(service) // as CONNECT targets already are
	c.e.Protocol = scheme
	c.e.Service = service
	c.e.Method = req.Method
	c.e.URL = u.String()
	c.e.Proto = req.Proto
	c.e.RequestHeader = req.Header.Clone()
	c.e.TraceID = TraceID(req.Header.Get("Traceparent"))
	if o.inflight != nil {
		c.e.ParentID = o.inflight.Parent(c.e.TraceID)
	}

	// Send it to the service the app addressed (the CONNECT target for
	// intercepted HTTPS), keeping the Host header as the app sent it.
	out := new(http.Request)
	*out = *req
	out.RequestURI = ""
	outURL := u
	outURL.Host = service
	out.URL = &outURL
	if out.Host == "" {
		out.Host = u.Host
	}
	grpc := c.e.IsGRPC()
	c.tapRequest(req, out, grpc)

	var transport http.RoundTripper = o.transport
	if grpc {
		transport = o.h2 // gRPC needs HTTP/2 to the upstream, trailers and all
	}
	res, err := transport.RoundTrip(out)
	if err != nil {
		return c.fail(req, err), nil
	}
	if grpc {
		c.e.Proto = res.Proto // HTTP/2 to the upstream, whatever the app spoke
	}
	c.e.Status = res.StatusCode
	c.e.ResponseHeader = res.Header.Clone()
	if res.Body == nil || res.Body == http.NoBody || res.StatusCode == http.StatusSwitchingProtocols {
		// No body, or the body is an upgraded connection: nothing to wait for.
		c.finish()
		return res, nil
	}
	c.eof.rc = res.Body
	limit := o.limit
	if grpc {
		c.resTap = newGRPCTap(res.Body, snapshots.FromServer, c.e.Start, res.Header.Get("Grpc-Encoding"), o.limit)
		c.eof.rc, c.resp, limit = c.resTap, res, 0
	}
	c.res = outboundBody{capture: capture{rc: &c.eof, limit: limit, done: c.responseDone}, bufs: &o.bufs}
	if n := res.ContentLength; n > 0 {
		c.res.buf = make([]byte, 0, min(n, o.limit))
	}
	res.Body = &c.res
	return res, nil
}

// tapRequest makes out's body record req's as it is read: its messages for
// a gRPC call, its first bytes otherwise.
func (c *outboundCall) tapRequest(req, out *http.Request, grpc bool) {
	switch {
	case req.Body == nil || req.Body == http.NoBody:
	case grpc:
		c.reqTap = newGRPCTap(req.Body, snapshots.FromClient, c.e.Start, req.Header.Get("Grpc-Encoding"), c.o.limit)
		out.Body = c.reqTap
	default:
		c.reqBody = &sharedCapture{rc: req.Body, limit: c.o.limit}
		out.Body = c.reqBody
	}
}

// withPort adds the scheme's default port to a host without one.
func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), port)
}

// fail records a call that got no response and returns the 502 the app
// receives instead.
func (c *outboundCall) fail(req *http.Request, err error) *http.Response {
	c.e.Error = err.Error()
	c.o.logger.Debug("outbound: upstream unreachable", "service", c.e.Service, "url", c.e.URL, "err", err)
	if c.reqBody != nil {
		c.reqBody.Close()
	}
	c.finish()
	if c.e.IsGRPC() {
		return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/2.0", ProtoMajor: 2,
			Header: grpcFailure(req, c.e.Start, err), Body: http.NoBody, Request: req}
	}
	body := fmt.Sprintf("replay: cannot reach %s for %s %s: %v\n", c.e.Service, c.e.Method, c.e.URL, err)
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Replay-Error", "upstream unreachable")
	return &http.Response{
		Status:        "502 Bad Gateway",
		StatusCode:    http.StatusBadGateway,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// responseDone runs when the response body hit EOF, failed, or was closed.
func (c *outboundCall) responseDone(cp *capture) {
	c.e.ResponseBody = cp.Bytes()
	c.e.ResponseBodySize = cp.Size()

	switch {
	case cp.Err() != nil && c.ctx.Err() != nil:
		c.e.Error = fmt.Sprintf("response body: the app stopped reading after %d bytes (%v)", cp.Size(), cp.Err())
	case cp.Err() != nil:
		c.e.Error = "response body: " + cp.Err().Error()
	case !c.eof.seen:
		c.e.Error = fmt.Sprintf("response body: the app stopped reading after %d bytes", cp.Size())
	}
	c.finish()
}

// finish records the exchange.
func (c *outboundCall) finish() {
	c.e.Duration = time.Since(c.e.Start)
	if c.reqBody != nil {
		c.e.RequestBody, c.e.RequestBodySize = c.reqBody.result()
	}
	var client, server []snapshots.Message
	if c.reqTap != nil {
		if c.e.Status != 0 {
			c.reqTap.drain(drainTime)
		}
		client, c.e.RequestBodySize = c.reqTap.result(c.o.limit)
	}
	if c.resTap != nil {
		server, c.e.ResponseBodySize = c.resTap.result(c.o.limit)
		c.e.ResponseBody = nil
	}
	c.e.Messages = mergeMessages(client, server)
	if c.resp != nil && len(c.resp.Trailer) > 0 {
		c.e.ResponseTrailer = c.resp.Trailer.Clone()
	}
	c.o.sink.AddExchange(&c.e)
	c.o.calls.Add(-1)
}

// outboundBody is the response body handed to the app's side of the proxy.
// WriteTo copies with a pooled buffer: goproxy copies every body with
// io.Copy, which would otherwise allocate 32 KiB per response. Each read is
// written at once, so a streamed response stays streamed.
type outboundBody struct {
	capture
	bufs *sync.Pool
}

func (b *outboundBody) WriteTo(w io.Writer) (int64, error) {
	bp, _ := b.bufs.Get().(*[]byte)
	if bp == nil {
		buf := make([]byte, 32<<10)
		bp = &buf
	}
	defer b.bufs.Put(bp)
	var total int64
	for {
		n, err := b.Read(*bp)
		if n > 0 {
			m, werr := w.Write((*bp)[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// eofReader notes whether its body was read to the end.
type eofReader struct {
	rc   io.ReadCloser
	seen bool
}

func (r *eofReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if err == io.EOF {
		r.seen = true
	}
	return n, err
}

func (r *eofReader) Close() error { return r.rc.Close() }

// sharedCapture keeps the first limit bytes of a request body and counts
// them all. The transport reads request bodies on its own goroutine, so the
// captured bytes are guarded; the lock is never held while reading.
type sharedCapture struct {
	rc    io.ReadCloser
	limit int64
	mu    sync.Mutex
	buf   []byte
	size  int64
}

func (s *sharedCapture) Read(p []byte) (int, error) {
	n, err := s.rc.Read(p)
	if n > 0 {
		s.mu.Lock()
		s.size += int64(n)
		if room := s.limit - int64(len(s.buf)); room > 0 {
			s.buf = append(s.buf, p[:min(int64(n), room)]...)
		}
		s.mu.Unlock()
	}
	return n, err
}

func (s *sharedCapture) Close() error { return s.rc.Close() }

// result returns a copy of the captured prefix and the bytes read so far.
func (s *sharedCapture) result() ([]byte, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.buf...), s.size
}
