package mock

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"strconv"
	"strings"
)

// maxDecoded bounds what a recorded body may expand to when the mock
// decodes it for a client: past it, the body is sent as recorded.
const maxDecoded = 256 << 20

// forClient is r as a client that sent accept (its Accept-Encoding
// values) may read it: a body recorded gzip- or deflate-encoded is decoded
// and sent as is (no Content-Encoding, Content-Length of the decoded body)
// unless accept names the coding. A client that asked for no coding (plain
// curl, a Go client with DisableCompression) then gets the body, not gzip
// bytes. raw is the recorded body (HEAD's reply has none but tells its
// length); one that does not decode, or another coding, is sent as
// recorded.
func (r reply) forClient(accept []string, raw []byte) reply {
	coding := strings.ToLower(strings.TrimSpace(r.header.Get("Content-Encoding")))
	if coding == "" || coding == "identity" || len(raw) == 0 || accepts(accept, coding) {
		return r
	}
	plain, ok := decodeBody(coding, raw)
	if !ok {
		return r
	}
	r.header.Del("Content-Encoding")
	if r.header.Get("Content-Length") != "" {
		r.header.Set("Content-Length", strconv.Itoa(len(plain)))
	}
	if r.body != nil {
		r.body = plain
	}
	return r
}

// accepts reports whether the Accept-Encoding values accept coding: they
// name it (gzip and x-gzip alike) or "*", with a q above 0.
func accepts(accept []string, coding string) bool {
	for _, v := range accept {
		for _, item := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(item, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "*" && name != coding && alias(name) != alias(coding) {
				continue
			}
			if q, ok := strings.CutPrefix(strings.ReplaceAll(strings.ToLower(params), " ", ""), "q="); ok {
				if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}

// alias is the coding x-gzip names.
func alias(coding string) string {
	if coding == "x-gzip" {
		return "gzip"
	}
	return coding
}

// decodeBody undoes a gzip or deflate coding; ok is false for another
// coding, a body that does not decode whole, or one past maxDecoded.
func decodeBody(coding string, raw []byte) (body []byte, ok bool) {
	var zr io.Reader
	var err error
	switch alias(coding) {
	case "gzip":
		zr, err = gzip.NewReader(bytes.NewReader(raw))
	case "deflate": // zlib-wrapped, as the RFC says; raw deflate from some servers
		if zr, err = zlib.NewReader(bytes.NewReader(raw)); err != nil {
			zr, err = flate.NewReader(bytes.NewReader(raw)), nil
		}
	default:
		return nil, false
	}
	if err != nil {
		return nil, false
	}
	body, err = io.ReadAll(io.LimitReader(zr, maxDecoded+1))
	if err != nil || len(body) > maxDecoded {
		return nil, false
	}
	return body, true
}
