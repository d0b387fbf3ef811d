package replayer

// Reading the response on the fast path of h1.go: status line, headers
// that matter, and the body by length, chunks or until the close.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

var (
	errMalformed = errors.New("malformed HTTP response")
	errClosed    = errors.New("connection closed by the target before a complete response")
)

// readLine returns the next line without its CRLF; a line longer than the
// buffer is cut to what fits (only short headers matter here). got counts the
// bytes read.
func (h *h1Conn) readLine(got *int) ([]byte, error) {
	line, err := h.br.ReadSlice('\n')
	*got += len(line)
	if errors.Is(err, bufio.ErrBufferFull) {
		k := copy(h.scratch[:], line)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = h.br.ReadSlice('\n')
			*got += len(line)
		}
		if err != nil {
			return nil, err
		}
		return h.scratch[:k], nil
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, nil
}

// readResponse reads one response (after any 1xx) and its body, through
// tap when set. keep reports whether the connection can carry another
// request.
func (h *h1Conn) readResponse(head bool, tap *bodyTap) (status int, n int64, keep bool, got int, err error) {
	for {
		tap.restart()
		line, err := h.readLine(&got)
		if err != nil {
			return 0, 0, false, got, readErr(err, got)
		}
		var hd respHead
		if status, hd.keep, err = parseStatusLine(line); err != nil {
			return 0, 0, false, got, err
		}
		hd.cl = -1
		for {
			hl, err := h.readLine(&got)
			if err != nil {
				return 0, 0, false, got, readErr(err, got)
			}
			if len(hl) == 0 {
				break
			}
			if err := hd.header(hl, tap); err != nil {
				return 0, 0, false, got, err
			}
		}
		keep, cl, chunked := hd.keep, hd.cl, hd.chunked
		if status < 200 {
			if status == 101 {
				return 0, 0, false, got, fmt.Errorf("%w: unexpected 101 Switching Protocols", errMalformed)
			}
			continue // 100 Continue, 103 Early Hints: the response follows
		}
		switch {
		case head || status == 204 || status == 304:
		case chunked:
			n, err = h.readChunked(&got, tap)
		case cl >= 0:
			var k int
			k, err = h.body(int(cl), tap)
			n = int64(k)
			got += k
			if err != nil {
				err = readErr(err, got)
			}
		default: // the body runs until the server closes the connection
			var w io.Writer = io.Discard
			if tap != nil {
				w = tap
			}
			n, err = io.Copy(w, h.br)
			keep = false
		}
		return status, n, keep && err == nil, got, err
	}
}

// body consumes the next n bytes of body, through tap when set.
func (h *h1Conn) body(n int, tap *bodyTap) (int, error) {
	if tap == nil {
		return h.br.Discard(n)
	}
	done := 0
	for done < n {
		if h.br.Buffered() == 0 {
			if _, err := h.br.Peek(1); err != nil {
				return done, err
			}
		}
		p, _ := h.br.Peek(min(h.br.Buffered(), n-done))
		tap.Write(p)
		k, _ := h.br.Discard(len(p))
		done += k
	}
	return done, nil
}

func (h *h1Conn) readChunked(got *int, tap *bodyTap) (int64, error) {
	var n int64
	for {
		line, err := h.readLine(got)
		if err != nil {
			return n, readErr(err, *got)
		}
		size, err := parseChunkSize(line)
		if err != nil {
			return n, err
		}
		if size == 0 {
			for { // trailer
				tl, err := h.readLine(got)
				if err != nil {
					return n, readErr(err, *got)
				}
				if len(tl) == 0 {
					return n, nil
				}
			}
		}
		k, err := h.body(int(size), tap)
		n += int64(k)
		*got += k
		if err != nil {
			return n, readErr(err, *got)
		}
		if crlf, err := h.readLine(got); err != nil || len(crlf) != 0 {
			if err == nil {
				err = fmt.Errorf("%w: no CRLF after a chunk", errMalformed)
			}
			return n, readErr(err, *got)
		}
	}
}

// parseStatusLine parses a response's status line; keep reports HTTP/1.1
// (keep-alive by default).
func parseStatusLine(line []byte) (status int, keep bool, err error) {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("%w: status line %q", errMalformed, truncate(line))
	}
	status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	if status < 100 || status > 999 || (len(line) > 12 && line[12] != ' ') {
		return 0, false, fmt.Errorf("%w: status line %q", errMalformed, truncate(line))
	}
	return status, line[7] == '1', nil
}

// respHead is what a response's headers say about its body and connection.
type respHead struct {
	cl      int64 // Content-Length; -1: none
	chunked bool
	keep    bool
}

// header applies the header line hl (not empty), showing it to tap when
// it samples.
func (hd *respHead) header(hl []byte, tap *bodyTap) error {
	colon := bytes.IndexByte(hl, ':')
	if colon <= 0 {
		return fmt.Errorf("%w: header line %q", errMalformed, truncate(hl))
	}
	name, value := hl[:colon], bytes.TrimSpace(hl[colon+1:])
	switch {
	case asciiEqualFold(name, "Content-Length"):
		v, perr := strconv.ParseInt(string(value), 10, 64)
		if perr != nil || v < 0 || (hd.cl >= 0 && v != hd.cl) {
			return fmt.Errorf("%w: Content-Length %q", errMalformed, truncate(value))
		}
		hd.cl = v
	case asciiEqualFold(name, "Transfer-Encoding"):
		hd.chunked = hasToken(value, "chunked")
	case asciiEqualFold(name, "Connection"):
		if hasToken(value, "close") {
			hd.keep = false
		} else if hasToken(value, "keep-alive") {
			hd.keep = true
		}
	}
	if tap != nil && tap.sample {
		tap.headerLine(name, value)
	}
	return nil
}

// parseChunkSize parses a chunk-size line (extensions ignored).
func parseChunkSize(line []byte) (int64, error) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	size, perr := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
	if perr != nil || size < 0 {
		return 0, fmt.Errorf("%w: chunk size %q", errMalformed, truncate(line))
	}
	return size, nil
}

// readErr describes a read failure.
func readErr(err error, got int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if got == 0 {
			return fmt.Errorf("%w (no response)", errClosed)
		}
		return errClosed
	}
	return err
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

// asciiEqualFold reports whether b equals s ignoring ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// hasToken reports whether the comma-separated list v holds token tok
// (ASCII case ignored).
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var item []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			item, v = v, nil
		}
		if asciiEqualFold(bytes.TrimSpace(item), tok) {
			return true
		}
	}
	return false
}
