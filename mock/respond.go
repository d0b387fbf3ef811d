package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"

	"github.com/replaykit/replay/internal/hopbyhop"
	"github.com/replaykit/replay/snapshots"
)

// MarkerHeader marks a response the mock made up rather than replayed: its
// value is "miss" for a mock miss, "recorded-error" when the recording holds
// a transport failure instead of a response, "truncated" when the recorded
// body was cut at the recorder's body limit.
const MarkerHeader = "X-Replay-Mock"

// answer is the reply to the request r from the recorded exchange e, its
// body decoded when r did not accept the recorded Content-Encoding
// (reply.forClient). A recorded response whose body was cut at recording
// (the recorder's body limit) is counted (Stats.Truncated) and, unless
// Config.AllowTruncated, refused: a 502 marked "truncated" that says so,
// rather than a cut body passed off as the upstream's answer.
func (s *Server) answer(r *http.Request, e *snapshots.Exchange) reply {
	method := r.Method
	if method != http.MethodHead && e.Status != 0 && bodyAllowed(e.Status) && e.ResponseTruncated() {
		s.truncated.Add(1)
		if !s.cfg.AllowTruncated {
			s.log.Info("mock refused a truncated recording", "exchange", e.ID, "kept", len(e.ResponseBody), "size", e.ResponseBodySize)
			return textReply(http.StatusBadGateway, "truncated", fmt.Sprintf("replay mock: the recorded response of %s %s (exchange %d) was cut at recording (%d of %d bytes kept): record again with a larger --body-limit, or pass --allow-truncated to serve it cut\n",
				e.Method, e.URL, e.ID, len(e.ResponseBody), e.ResponseBodySize))
		}
	}
	return recordedReply(method, e).forClient(r.Header.Values("Accept-Encoding"), e.ResponseBody)
}

// reply is a response ready to send: status, headers and body.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// recordedReply builds the reply for the recorded exchange e to a request
// with method: the recorded status, headers and raw body bytes (gzip stays
// gzip: answer decodes it for a client that did not accept it), hop-by-hop
// headers dropped and Content-Length set to the body.
func recordedReply(method string, e *snapshots.Exchange) reply {
	if e.Status == 0 {
		msg := e.Error
		if msg == "" {
			msg = "no response was recorded"
		}
		return textReply(http.StatusBadGateway, "recorded-error", "replay mock: the recorded call failed: "+msg+"\n")
	}
	h := make(http.Header, len(e.ResponseHeader)+1)
	for k, vs := range e.ResponseHeader {
		h[textproto.CanonicalMIMEHeaderKey(k)] = append([]string(nil), vs...)
	}
	hopbyhop.Remove(h)
	recordedLength := h.Get("Content-Length")
	delete(h, "Content-Length") // recomputed below
	r := reply{status: e.Status, header: h, body: e.ResponseBody}
	switch {
	case method == http.MethodHead:
		// No body; the length of the one a GET would get, as recorded.
		if recordedLength != "" {
			h.Set("Content-Length", recordedLength)
		}
		r.body = nil
	case !bodyAllowed(e.Status):
		r.body = nil
	default:
		h.Set("Content-Length", strconv.Itoa(len(r.body)))
		if e.ResponseTruncated() {
			h.Set(MarkerHeader, "truncated")
		}
	}
	return r
}

// bodyAllowed reports whether a response with status may have a body.
func bodyAllowed(status int) bool {
	return !(status >= 100 && status < 200 || status == http.StatusNoContent || status == http.StatusNotModified)
}

// missReply is the 502 a miss gets when OnMiss is "error".
func missReply(me *MissError) reply {
	b, _ := json.Marshal(struct {
		Error       string   `json:"error"`
		Request     string   `json:"request"`
		Closest     string   `json:"closest"`
		Differences []string `json:"differences"`
	}{"mock miss", me.Request, me.Closest, me.Differences})
	b = append(b, '\n')
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(MarkerHeader, "miss")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	return reply{status: http.StatusBadGateway, header: h, body: b}
}

func textReply(status int, marker, msg string) reply {
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set(MarkerHeader, marker)
	h.Set("Content-Length", strconv.Itoa(len(msg)))
	return reply{status: status, header: h, body: []byte(msg)}
}

// write sends r through a ResponseWriter. net/http adds neither a sniffed
// Content-Type nor a Date the recording did not have.
func (r reply) write(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.header {
		h[k] = vs
	}
	for _, k := range []string{"Content-Type", "Date"} {
		if _, ok := r.header[k]; !ok {
			h[k] = nil
		}
	}
	w.WriteHeader(r.status)
	if len(r.body) > 0 {
		_, _ = w.Write(r.body) // the client went away; nothing to do
	}
}

// response turns r into the *http.Response goproxy writes to an
// intercepted connection.
func (r reply) response(req *http.Request) *http.Response {
	resp := &http.Response{
		StatusCode:    r.status,
		Status:        strconv.Itoa(r.status) + " " + http.StatusText(r.status),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        r.header,
		Request:       req,
		ContentLength: int64(len(r.body)),
		Body:          http.NoBody,
	}
	if len(r.body) > 0 {
		resp.Body = io.NopCloser(bytes.NewReader(r.body))
	} else if cl := r.header.Get("Content-Length"); cl != "" && req.Method == http.MethodHead {
		resp.ContentLength, _ = strconv.ParseInt(cl, 10, 64)
	}
	return resp
}
