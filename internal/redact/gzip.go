package redact

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
)

// maxGunzip bounds what a gzip-encoded body may expand to for redaction.
const maxGunzip = 64 << 20

// gzipBody redacts a gzip-encoded JSON or form body: decompressed,
// redacted, and compressed again only when something changed. A body cut
// short (at the body limit) is redacted in what decompresses, and then
// holds that part, compressed whole.
func (r *Redactor) gzipBody(ct string, b []byte) ([]byte, bool) {
	if ct != "" && !strings.Contains(ct, "json") && !isForm(ct) {
		return b, false
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		// Not gzip after all: a HAR file holds bodies decoded, with the
		// header the server sent.
		return r.plainBody(ct, b)
	}
	plain, _ := io.ReadAll(io.LimitReader(zr, maxGunzip))
	red, ok := r.plainBody(ct, plain)
	if !ok {
		return b, false
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(red) // a bytes.Buffer does not fail
	zw.Close()
	return buf.Bytes(), true
}
