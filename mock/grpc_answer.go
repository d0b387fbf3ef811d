package mock

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"time"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/internal/hopbyhop"
	"github.com/replaykit/replay/snapshots"
)

// grpcCall answers a gRPC call to a mocked service. It returns the
// response to send, or nil with passthrough set when the call missed and
// Config.OnMiss lets the real upstream answer (r's body then starts again
// with the messages already read).
func (s *Server) grpcCall(r *http.Request, scheme, service string) (resp *http.Response, passthrough bool) {
	c := s.startCall(r)
	path := r.URL.EscapedPath()
	msgs, ended, raw, err := readCall(r, s.m.grpcFirst[service+" "+path])
	if err != nil {
		s.endCall(c, scheme, service, snapshots.GRPCEndpoint(path), true)
		return grpcError(13, "error", "replay mock: "+err.Error()), false
	}
	q := grpcRequest(scheme, service, r.URL, grpcBody(s.cfg.Decoder, path, msgs, false))
	e, me, endpoint := s.lookupRequest(&q)
	switch {
	case me != nil && s.cfg.OnMiss == OnMissPassthrough:
		s.passthrough.Add(1)
		s.endCall(c, scheme, service, endpoint, true)
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(raw), r.Body), r.Body}
		return nil, true
	case me != nil:
		s.endCall(c, scheme, service, endpoint, true)
		return grpcError(2, "miss", me.Error()), false // UNKNOWN: the recording has no answer
	}
	s.endCall(c, scheme, service, endpoint, false)
	if _, _, ok := e.GRPCStatus(); !ok && e.Error != "" && len(e.MessagesFrom(snapshots.FromServer)) == 0 {
		// The recorded call ended without a status or an answer (the
		// client gave up, or the connection broke): answer nothing until
		// this client gives up too.
		holdOn(r, e)
		return grpcError(1, "recorded-error", "replay mock: the recorded call ended without a status: "+e.Error), false
	}
	if e.ResponseTruncated() {
		s.truncated.Add(1)
		if !s.cfg.AllowTruncated {
			return grpcError(13, "truncated", "replay mock: a recorded message of this call was cut at recording: record again with a larger --body-limit, or pass --allow-truncated"), false
		}
	}
	return s.grpcReply(r, e, len(msgs), ended), false
}

// grpcReply is the recorded answer e to r: its headers, then its server
// messages, each sent once the client has sent as many messages as it had
// when it was recorded (so that a ping-pong call goes as recorded), then
// its trailers.
func (s *Server) grpcReply(r *http.Request, e *snapshots.Exchange, received int, ended bool) *http.Response {
	h := make(http.Header, len(e.ResponseHeader))
	for k, vs := range e.ResponseHeader {
		h[textproto.CanonicalMIMEHeaderKey(k)] = append([]string(nil), vs...)
	}
	hopbyhop.Remove(h)
	delete(h, "Content-Length")
	resp := &http.Response{StatusCode: e.Status, Status: http.StatusText(e.Status), Proto: "HTTP/2.0", ProtoMajor: 2,
		Header: h, Body: http.NoBody, Request: r}
	if len(e.MessagesFrom(snapshots.FromServer)) == 0 && len(e.ResponseTrailer) == 0 {
		return resp // Trailers-Only: the status is in the headers
	}
	resp.ContentLength = -1
	resp.Trailer = make(http.Header, len(e.ResponseTrailer))
	for k, vs := range e.ResponseTrailer {
		resp.Trailer[textproto.CanonicalMIMEHeaderKey(k)] = append([]string(nil), vs...)
	}
	pr, pw := io.Pipe()
	resp.Body = pr
	start := time.Now()
	go func() {
		pw.CloseWithError(s.stream(r, e, start, received, ended, pw))
	}()
	return resp
}

// stream writes e's server messages to w on the recorded schedule.
func (s *Server) stream(r *http.Request, e *snapshots.Exchange, start time.Time, received int, ended bool, w io.Writer) error {
	enc := e.ResponseHeader.Get("Grpc-Encoding")
	need := 0
	wait := func(n int) {
		for received < n && !ended {
			if _, err := grpcwire.ReadFrame(r.Body, maxRequestBody); err != nil {
				ended = true
				return
			}
			received++
		}
	}
	for _, m := range e.Messages {
		if m.From == snapshots.FromClient {
			need++
			continue
		}
		wait(need)
		if s.cfg.Timing == TimingRecorded {
			if d := m.Offset - time.Since(start); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-r.Context().Done():
					t.Stop()
					return r.Context().Err()
				}
			}
		}
		data := m.Data
		if m.Compressed && m.Encoding == "" {
			var err error
			if data, err = grpcwire.Compress(enc, m.Data); err != nil {
				return err
			}
		}
		if _, err := w.Write(grpcwire.AppendFrame(nil, data, m.Compressed)); err != nil {
			return err
		}
	}
	wait(need) // the trailers come once the client has sent what it sent
	if _, _, ok := e.GRPCStatus(); !ok && e.Error != "" {
		holdOn(r, e) // the recorded call ended without trailers: so does this one
		return errors.New("replay mock: the recorded call ended without a status: " + e.Error)
	}
	return nil
}

// holdOn waits until r's client gives up, for at most e's recorded
// duration (and a tenth of a second).
func holdOn(r *http.Request, e *snapshots.Exchange) {
	t := time.NewTimer(max(e.Duration, 100*time.Millisecond))
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-t.C:
	}
}

// writeGRPC sends resp through a ResponseWriter (a service listener):
// headers, the messages as they come, each flushed, then the trailers.
func writeGRPC(w http.ResponseWriter, resp *http.Response) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	if resp.Body != http.NoBody {
		rc := http.NewResponseController(w)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					break
				}
				rc.Flush()
			}
			if err != nil {
				break
			}
		}
		resp.Body.Close()
	}
	for k, vs := range resp.Trailer {
		w.Header()[http.TrailerPrefix+k] = vs
	}
}
