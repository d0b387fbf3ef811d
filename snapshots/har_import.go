package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ImportHAR reads a HAR 1.2 file (ours, Chrome's, Firefox's) into w. Entries
// that ExportHAR wrote come back exactly. Other entries become inbound
// exchanges (ImportHARWith can make them outbound) of the service named by the URL's host and port (80 or 443 by
// default); browsers store bodies decoded, so their Content-Encoding and
// Content-Length headers are dropped with the HTTP/2 pseudo-headers, and
// entries a browser loads without the network (data:, blob:,
// chrome-extension:) are skipped. An entry that breaks the rules (see
// ImportJSONL; its URL must be http or https) is skipped too, told to
// ImportOptions.Rejected; a file of which nothing imports is an error
// (ErrNothingImported). The file is read as a stream, an entry at a time.
func ImportHAR(ctx context.Context, r io.Reader, w *Writer) error {
	return ImportHARWith(ctx, r, w, HAROptions{})
}

// ImportOptions configure ImportHARWith, ImportJSONLWith and Import. The
// zero value is what ImportHAR and ImportJSONL do.
type ImportOptions struct {
	// Direction is given to HAR entries that lack replay's fields (those of
	// browsers and other tools): Outbound makes a HAR of an upstream API's
	// traffic something the mock can serve. Empty means Inbound. JSON
	// Lines records carry their own.
	Direction Direction
	// Rejected is called for each entry skipped because it breaks the
	// rules (see ImportJSONL); nil ignores them.
	Rejected func(*Rejected)
}

// HAROptions is the former name of ImportOptions.
type HAROptions = ImportOptions

// ImportHARWith is ImportHAR with options.
func ImportHARWith(ctx context.Context, r io.Reader, w *Writer, opts ImportOptions) error {
	if err := checkDirection(opts.Direction); err != nil {
		return fmt.Errorf("import har: %w", err)
	}
	im := newImporter(w, w.rules)
	im.direction, im.rejected = opts.Direction, opts.Rejected
	if err := importHAR(ctx, r, im); err != nil {
		return fmt.Errorf("import har: %w", err)
	}
	im.finish(w)
	return nil
}

var errNotHAR = errors.New(`not a HAR file: want a JSON object with a "log" object`)

func importHAR(ctx context.Context, r io.Reader, im *importer) error {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return errNotHAR
	}
	sawLog := false
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return err
		}
		if key != "log" {
			if err := skipValue(dec); err != nil {
				return err
			}
			continue
		}
		if err := importHARLog(ctx, dec, im); err != nil {
			return err
		}
		sawLog = true
	}
	if !sawLog {
		return errNotHAR
	}
	return im.done()
}

func importHARLog(ctx context.Context, dec *json.Decoder, im *importer) error {
	if err := expectDelim(dec, '{'); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return err
		}
		switch key {
		case "_replay":
			var h fileHeader
			if err := dec.Decode(&h); err != nil {
				return fmt.Errorf("log._replay: %w", jsonError(err))
			}
			if h.Format != harFormat {
				return fmt.Errorf("log._replay: format %q is not %q", h.Format, harFormat)
			}
			if h.Version < 1 || h.Version > harVersion {
				return fmt.Errorf("%w %d (this build reads versions 1 to %d)", ErrVersion, h.Version, harVersion)
			}
			im.header = &h
		case "entries":
			err = eachElement(dec, "entry", "entries", func(n int) error {
				if n%1024 == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				return im.entry("entry", n, 0, importHAREntry(dec, im))
			})
		case "_replay_statements":
			err = eachElement(dec, "statement", "statements", func(n int) error {
				var j jsonStatement
				if err := dec.Decode(&j); err != nil {
					return im.entry("statement", n, 0, recordError(err))
				}
				s, err := j.statement()
				if err == nil {
					err = im.statement(s)
				}
				return im.entry("statement", n, 0, reject(err))
			})
		default:
			err = skipValue(dec)
		}
		if err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing brace
	return syntaxError(err)
}

// importHAREntry decodes and imports the entry that comes next; an error
// that rejects the entry alone is an errReject.
func importHAREntry(dec *json.Decoder, im *importer) error {
	var he harEntry
	if err := dec.Decode(&he); err != nil {
		return recordError(err)
	}
	e, err := he.exchange()
	if err != nil || e == nil {
		return reject(err)
	}
	if he.Replay == nil && im.direction != "" {
		e.Direction = im.direction
	}
	if err := im.exchange(e); err != nil {
		if e.ID != 0 {
			return reject(fmt.Errorf("exchange %d: %w", e.ID, err))
		}
		return err
	}
	return nil
}

// eachElement calls f for each element of the array that comes next (null
// is an empty array); errors name the element (what), counting from 1.
func eachElement(dec *json.Decoder, what, whats string, f func(n int) error) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%s: want an array", whats)
	}
	for n := 1; dec.More(); n++ {
		if err := f(n); err != nil {
			return fmt.Errorf("%s %d: %w", what, n, err)
		}
	}
	_, err = dec.Token()
	return syntaxError(err)
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q", want)
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", syntaxError(err)
	}
	key, ok := tok.(string)
	if !ok {
		return "", errors.New("bad JSON: want an object key")
	}
	return key, nil
}

func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	return syntaxError(dec.Decode(&raw))
}

func syntaxError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) {
		return errors.New("bad JSON: unexpected end of file")
	}
	return jsonError(err)
}

// exchange converts a HAR entry; nil means the entry is skipped.
func (he *harEntry) exchange() (*Exchange, error) {
	if he.Replay != nil {
		return he.ours()
	}
	return he.foreign()
}

// ours restores an entry ExportHAR wrote.
func (he *harEntry) ours() (*Exchange, error) {
	x := *he.Replay
	if x.Start == "" {
		x.Start = he.StartedDateTime
	}
	x.Method = he.Request.Method
	if x.URL == "" {
		x.URL = he.Request.URL
	}
	x.Status = harInt(he.Response.Status)
	x.RequestHeader = rawHeader(he.Request.Headers)
	x.ResponseHeader = rawHeader(he.Response.Headers)
	if pd := he.Request.PostData; pd != nil {
		x.RequestBody, x.RequestBodyEncoding = pd.Text, pd.Encoding
	}
	x.ResponseBody, x.ResponseBodyEncoding = he.Response.Content.Text, he.Response.Content.Encoding
	return x.exchange()
}

// serviceOf returns the protocol and host:port an HTTP(S) or WebSocket URL
// names, with the scheme's default port; ok is false for other URLs.
func serviceOf(u *url.URL) (protocol, service string, ok bool) {
	port := ""
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		protocol, port = "http", "80"
	case "https", "wss":
		protocol, port = "https", "443"
	default:
		return "", "", false
	}
	if p := u.Port(); p != "" {
		port = p
	}
	return protocol, net.JoinHostPort(u.Hostname(), port), u.Host != ""
}

// browserScheme reports whether scheme names something a browser loads
// without the network (its HAR lists them; they are skipped).
func browserScheme(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "data", "blob", "about", "file", "javascript", "chrome", "chrome-extension", "moz-extension", "safari-extension", "edge", "view-source":
		return true
	}
	return false
}

// foreign converts an entry a browser or another tool wrote.
func (he *harEntry) foreign() (*Exchange, error) {
	u, err := url.Parse(he.Request.URL)
	if err != nil {
		return nil, fmt.Errorf("bad url %q", he.Request.URL)
	}
	protocol, service, ok := serviceOf(u)
	if protocol == "" {
		if !browserScheme(u.Scheme) {
			return nil, fmt.Errorf("url %q is not http(s)", he.Request.URL)
		}
		return nil, nil // data:, blob:, chrome-extension:…
	}
	if !ok {
		return nil, fmt.Errorf("url %q has no host", he.Request.URL)
	}
	start, err := parseHARTime(he.StartedDateTime)
	if err != nil {
		return nil, err
	}
	e := &Exchange{
		Direction:      Inbound,
		Protocol:       protocol,
		Service:        service,
		Start:          start,
		Duration:       harDuration(he),
		Method:         he.Request.Method,
		URL:            he.Request.URL,
		Proto:          harProto(he.Request.HTTPVersion),
		RequestHeader:  canonicalHeader(he.Request.Headers),
		Status:         harInt(he.Response.Status),
		ResponseHeader: canonicalHeader(he.Response.Headers),
		Error:          he.Response.Error,
	}
	if e.RequestBody, err = harPostBody(he.Request.PostData); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	e.RequestBodySize = int64(len(e.RequestBody))
	if he.Request.PostData == nil { // a body was sent but not kept
		e.RequestBodySize = harInt64(he.Request.BodySize)
	}
	if e.ResponseBody, err = decodeBody(he.Response.Content.Text, he.Response.Content.Encoding); err != nil {
		return nil, fmt.Errorf("response body: %w", err)
	}
	e.ResponseBodySize = int64(len(e.ResponseBody))
	if e.ResponseBody != nil {
		// Browsers store the body decoded: serving it with its original
		// encoding and length would break clients.
		e.ResponseHeader.Del("Content-Encoding")
		e.ResponseHeader.Del("Content-Length")
		if len(e.ResponseHeader) == 0 {
			e.ResponseHeader = nil
		}
	} else {
		e.ResponseBodySize = harInt64(he.Response.Content.Size)
	}
	if e.Status == 0 && e.Error == "" {
		e.Error = "no response recorded"
	}
	e.TraceID = traceID(e.RequestHeader.Get("Traceparent"))
	return e, nil
}

// harPostBody returns the request body: the text, or else the form params.
func harPostBody(pd *harPostData) ([]byte, error) {
	if pd == nil {
		return nil, nil
	}
	if pd.Text != nil && *pd.Text != "" {
		return decodeBody(pd.Text, pd.Encoding)
	}
	if len(pd.Params) == 0 {
		return nil, nil
	}
	form := url.Values{}
	for _, p := range pd.Params {
		form.Add(p.Name, p.Value)
	}
	return []byte(form.Encode()), nil
}

// rawHeader rebuilds a header exactly as ExportHAR listed it.
func rawHeader(nvs []harNV) http.Header {
	if len(nvs) == 0 {
		return nil
	}
	h := http.Header{}
	for _, nv := range nvs {
		h[nv.Name] = append(h[nv.Name], nv.Value)
	}
	return h
}

// canonicalHeader builds a header from a browser's list: canonical names
// (HTTP/2 lists them in lower case), without pseudo-headers (":path").
func canonicalHeader(nvs []harNV) http.Header {
	h := http.Header{}
	for _, nv := range nvs {
		if nv.Name == "" || strings.HasPrefix(nv.Name, ":") {
			continue
		}
		h.Add(nv.Name, nv.Value)
	}
	if len(h) == 0 {
		return nil
	}
	return h
}

// parseHARTime reads startedDateTime: ISO 8601 with an offset or Z, with or
// without fractions of a second.
func parseHARTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return checkTime(t, s)
		}
	}
	return time.Time{}, fmt.Errorf("bad startedDateTime %q", s)
}

// harDuration is the entry's total time, or the sum of its known timings.
func harDuration(he *harEntry) time.Duration {
	ms := he.Time
	if !(ms > 0) {
		ms = 0
		t := he.Timings
		for _, v := range []float64{t.Blocked, t.DNS, t.Connect, t.Send, t.Wait, t.Receive} {
			if v > 0 {
				ms += v
			}
		}
	}
	if ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		return 0
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// harProto maps httpVersion spellings ("HTTP/2", "h2", "http/2.0") to Go's.
func harProto(v string) string {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "http/1.0":
		return "HTTP/1.0"
	case "http/2", "http/2.0", "h2", "h2c":
		return "HTTP/2.0"
	case "http/3", "http/3.0", "h3":
		return "HTTP/3.0"
	}
	return "" // HTTP/1.1, or not known
}

// harInt converts a HAR number to an int, 0 when it is not a sensible one.
func harInt(f float64) int {
	if !(f >= 0 && f < 1e9) {
		return 0
	}
	return int(f)
}

func harInt64(f float64) int64 {
	if !(f >= 0 && f < 1e15) {
		return 0
	}
	return int64(f)
}

// traceID returns the trace id of a W3C traceparent header, or "".
func traceID(traceparent string) string {
	parts := strings.Split(strings.TrimSpace(traceparent), "-")
	if len(parts) != 4 || len(parts[1]) != 32 {
		return ""
	}
	for _, c := range parts[1] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ""
		}
	}
	return parts[1]
}
