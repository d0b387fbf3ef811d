package snapshots

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// HAR identification of the "_replay" object in the log.
const (
	harFormat = "replay-har"
	// harVersion 2 added response trailers and gRPC messages to "_replay";
	// version 1 files read as before.
	harVersion = 2
)

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/), as much of it
// as replay writes and reads. Numbers are float64: tools write sizes and
// times as integers or fractions, and -1 for "not known".
type harEntry struct {
	Pageref         string          `json:"pageref,omitempty"`
	StartedDateTime string          `json:"startedDateTime"`
	Time            float64         `json:"time"`
	Request         harRequest      `json:"request"`
	Response        harResponse     `json:"response"`
	Cache           json.RawMessage `json:"cache"`
	Timings         harTimings      `json:"timings"`
	ServerIPAddress string          `json:"serverIPAddress,omitempty"`
	Connection      string          `json:"connection,omitempty"`
	Replay          *jsonExchange   `json:"_replay,omitempty"`
}

type harRequest struct {
	Method      string            `json:"method"`
	URL         string            `json:"url"`
	HTTPVersion string            `json:"httpVersion"`
	Cookies     []json.RawMessage `json:"cookies"`
	Headers     []harNV           `json:"headers"`
	QueryString []harNV           `json:"queryString"`
	PostData    *harPostData      `json:"postData,omitempty"`
	HeadersSize float64           `json:"headersSize"`
	BodySize    float64           `json:"bodySize"`
}

type harResponse struct {
	Status      float64           `json:"status"`
	StatusText  string            `json:"statusText"`
	HTTPVersion string            `json:"httpVersion"`
	Cookies     []json.RawMessage `json:"cookies"`
	Headers     []harNV           `json:"headers"`
	Content     harContent        `json:"content"`
	RedirectURL string            `json:"redirectURL"`
	HeadersSize float64           `json:"headersSize"`
	BodySize    float64           `json:"bodySize"`
	// Error is Chrome's reason for a request that got no response.
	Error string `json:"_error,omitempty"`
}

type harNV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type harPostData struct {
	MimeType string     `json:"mimeType"`
	Text     *string    `json:"text,omitempty"`
	Encoding string     `json:"encoding,omitempty"`
	Params   []harParam `json:"params,omitempty"`
}

type harParam struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

type harContent struct {
	Size     float64 `json:"size"`
	MimeType string  `json:"mimeType"`
	Text     *string `json:"text,omitempty"`
	Encoding string  `json:"encoding,omitempty"`
}

type harTimings struct {
	Blocked float64 `json:"blocked"`
	DNS     float64 `json:"dns"`
	Connect float64 `json:"connect"`
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
	SSL     float64 `json:"ssl"`
}

// ExportHAR writes the snapshot's exchanges as HAR 1.2; statements and replay
// fields go in "_replay" custom fields so that the round trip is lossless:
// each entry's "_replay" holds the exchange's own fields (id, direction,
// service, exact duration, endpoint, parent…), the log's "_replay" the
// format version, capture statistics and rules, and the log's
// "_replay_statements" the SQL statements. Bodies that are not UTF-8 are
// base64-encoded ("encoding":"base64"). Entries are streamed, one at a time.
func ExportHAR(ctx context.Context, s *Snapshot, w io.Writer) error {
	if err := exportHAR(ctx, s, w); err != nil {
		return fmt.Errorf("export har: %w", err)
	}
	return nil
}

func exportHAR(ctx context.Context, s *Snapshot, w io.Writer) error {
	h, err := headerOf(s, harFormat, harVersion)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	fmt.Fprintf(bw, "{\n  \"log\": {\n    \"version\": \"1.2\",\n    \"creator\": {\"name\": \"replay\", \"version\": \"%d\"},\n", SchemaVersion)
	fmt.Fprintf(bw, "    \"pages\": [],\n    \"_replay\": %s,\n    \"entries\": [", head)
	n := 0
	for e, err := range s.Exchanges(ctx, Filter{}) {
		if err != nil {
			return err
		}
		if err := writeHARItem(bw, n, harEntryOf(e)); err != nil {
			return err
		}
		n++
	}
	bw.WriteString("\n    ],\n    \"_replay_statements\": [")
	n = 0
	for st, err := range s.Statements(ctx) {
		if err != nil {
			return err
		}
		j := toJSONStatement(st)
		j.Type = ""
		if err := writeHARItem(bw, n, j); err != nil {
			return err
		}
		n++
	}
	bw.WriteString("\n    ]\n  }\n}\n")
	return bw.Flush()
}

// writeHARItem writes the n-th element of an array.
func writeHARItem(w *bufio.Writer, n int, v any) error {
	b, err := json.MarshalIndent(v, "      ", "  ")
	if err != nil {
		return err
	}
	if n > 0 {
		w.WriteByte(',')
	}
	w.WriteString("\n      ")
	_, err = w.Write(b)
	return err
}

// harEntryOf describes e as a HAR entry; its "_replay" keeps what HAR has
// no place for.
func harEntryOf(e *Exchange) *harEntry {
	x := toJSONExchange(e)
	x.Type = ""
	proto := e.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	ms := float64(e.Duration) / 1e6
	he := &harEntry{
		// Milliseconds, as browsers write it; "_replay" keeps nanoseconds.
		StartedDateTime: e.Start.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Time:            ms,
		Request: harRequest{
			Method:      e.Method,
			URL:         absoluteURL(e),
			HTTPVersion: proto,
			Cookies:     []json.RawMessage{},
			Headers:     harHeaders(e.RequestHeader),
			QueryString: harQuery(e.URL),
			HeadersSize: -1,
			BodySize:    float64(e.RequestBodySize),
		},
		Response: harResponse{
			Status:      float64(e.Status),
			StatusText:  http.StatusText(e.Status),
			HTTPVersion: proto,
			Cookies:     []json.RawMessage{},
			Headers:     harHeaders(e.ResponseHeader),
			Content: harContent{
				Size:     float64(e.ResponseBodySize),
				MimeType: e.ResponseHeader.Get("Content-Type"),
				Text:     x.ResponseBody,
				Encoding: x.ResponseBodyEncoding,
			},
			HeadersSize: -1,
			BodySize:    float64(e.ResponseBodySize),
			Error:       e.Error,
		},
		Cache:   json.RawMessage(`{}`),
		Timings: harTimings{Blocked: -1, DNS: -1, Connect: -1, SSL: -1, Wait: ms},
		Replay:  x,
	}
	if x.RequestBody != nil {
		he.Request.PostData = &harPostData{
			MimeType: e.RequestHeader.Get("Content-Type"),
			Text:     x.RequestBody,
			Encoding: x.RequestBodyEncoding,
		}
	}
	// The bodies and headers live in the HAR fields; "_replay" keeps the
	// rest. URL stays only when the HAR url had to be made absolute.
	x.RequestHeader, x.ResponseHeader = nil, nil
	x.RequestBody, x.RequestBodyEncoding = nil, ""
	x.ResponseBody, x.ResponseBodyEncoding = nil, ""
	x.Method, x.Status = "", 0
	if he.Request.URL == e.URL {
		x.URL = ""
	}
	return he
}

// absoluteURL returns e.URL, made absolute from the protocol and service
// when the recording kept only the path.
func absoluteURL(e *Exchange) string {
	if u, err := url.Parse(e.URL); err == nil && u.IsAbs() {
		return e.URL
	}
	scheme := e.Protocol
	if scheme == "" {
		scheme = "http"
	}
	host := e.Service
	if host == "" {
		host = "localhost"
	}
	path := e.URL
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return scheme + "://" + host + path
}

// harHeaders lists h in a stable order (sorted names, values as given).
func harHeaders(h http.Header) []harNV {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	out := []harNV{}
	for _, k := range names {
		for _, v := range h[k] {
			out = append(out, harNV{k, v})
		}
	}
	return out
}

// harQuery lists the query parameters of target.
func harQuery(target string) []harNV {
	out := []harNV{}
	i := strings.IndexByte(target, '?')
	if i < 0 {
		return out
	}
	q := target[i+1:]
	if j := strings.IndexByte(q, '#'); j >= 0 {
		q = q[:j]
	}
	for _, kv := range strings.Split(q, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		out = append(out, harNV{k, v})
	}
	return out
}
