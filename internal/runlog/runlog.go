// Package runlog carries a run file through a log: Encode writes it
// compressed (gzip) and base64'd between two marker lines at the end of a
// command's output, Decode finds it again in that output, for instance in a
// Kubernetes pod's log, and checks that it came back whole.
//
// The format, one line each:
//
//	=== replay run file: begin (gzip, base64) ===
//	H4sIAAAAAAAC/+y9CXwU1f0A...            (76 characters a line)
//	...
//	=== replay run file: end (bytes=1843200 sha256=9f2c...) ===
//
// The end line gives the run file's size and SHA-256, so a log that was cut,
// rotated or had other output interleaved with the payload is refused
// rather than read as a damaged run file.
package runlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
)

const (
	// Begin is the line before the payload.
	Begin = "=== replay run file: begin (gzip, base64) ==="
	// endPrefix starts the line after it; endSuffix ends it.
	endPrefix = "=== replay run file: end ("
	endSuffix = ") ==="
	// LineWidth is the payload's characters per line (as MIME's), well
	// under the 16 KiB at which container runtimes split log lines.
	LineWidth = 76
)

// Errors Decode returns (wrapped with details).
var (
	// ErrNoRun: the output holds no begin line.
	ErrNoRun = errors.New("no run file in the output (no begin marker: was the run started with --print-run, and did it finish?)")
	// ErrCut: a begin line without its end line.
	ErrCut = errors.New("the run file in the output is cut short (no end marker)")
	// ErrDamaged: the payload does not decode to the run file the end line
	// describes.
	ErrDamaged = errors.New("the run file in the output is damaged")
)

// EncodeFile writes the run file at path to w between the markers.
func EncodeFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("print run: %w", err)
	}
	defer f.Close()
	if err := Encode(w, f); err != nil {
		return fmt.Errorf("print run %s: %w", path, err)
	}
	return nil
}

// Encode writes what r holds (a run file) to w between the markers. The
// whole block is built in memory and written with one Write, so that other
// output of the process is less likely to land inside it.
func Encode(w io.Writer, r io.Reader) error {
	var buf bytes.Buffer
	buf.WriteString(Begin + "\n")
	lw := &lineWriter{w: &buf}
	b64 := base64.NewEncoder(base64.StdEncoding, lw)
	zw, err := gzip.NewWriterLevel(b64, gzip.BestCompression)
	if err != nil {
		return err
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(zw, sum), r)
	if err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := b64.Close(); err != nil {
		return err
	}
	lw.finish()
	fmt.Fprintf(&buf, "%sbytes=%d sha256=%s%s\n", endPrefix, n, hex.EncodeToString(sum.Sum(nil)), endSuffix)
	_, err = w.Write(buf.Bytes())
	return err
}

// lineWriter breaks what it is given into lines of LineWidth characters.
type lineWriter struct {
	w   *bytes.Buffer
	col int
}

func (l *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(LineWidth-l.col, len(p))
		l.w.Write(p[:k])
		l.col += k
		p = p[k:]
		if l.col == LineWidth {
			l.w.WriteByte('\n')
			l.col = 0
		}
	}
	return n, nil
}

// finish ends a last, shorter line.
func (l *lineWriter) finish() {
	if l.col > 0 {
		l.w.WriteByte('\n')
		l.col = 0
	}
}

// Stats describes a run file Decode found.
type Stats struct {
	// Bytes is the run file's size; Encoded the payload's characters in
	// the output (newlines included).
	Bytes, Encoded int64
}

// Decode finds the run file in the output r and writes it to w. It reads
// r once, holding one line at a time; the output may have anything before
// the begin line (the run's report) and after the end line, but only one
// run file (a second is ErrDamaged: w already holds the first).
func Decode(r io.Reader, w io.Writer) (Stats, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var st Stats
	found := false
	for {
		line, err := readLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, err
		}
		if line != Begin {
			continue
		}
		if found {
			// A later run file replaces an earlier one; w must start over.
			return st, fmt.Errorf("%w: it holds more than one run file", ErrDamaged)
		}
		found = true
		if st, err = decodeBlock(br, w); err != nil {
			return st, err
		}
	}
	if !found {
		return st, ErrNoRun
	}
	return st, nil
}

// decodeBlock decodes the payload after a begin line up to its end line.
func decodeBlock(br *bufio.Reader, w io.Writer) (Stats, error) {
	p := &payload{br: br}
	sum := sha256.New()
	cw := &countWriter{w: io.MultiWriter(w, sum)}
	zr, err := gzip.NewReader(base64.NewDecoder(base64.StdEncoding, p))
	if err == nil {
		_, err = io.Copy(cw, zr)
	}
	st := Stats{Bytes: cw.n, Encoded: p.n}
	if p.err != nil { // the reader's own error explains the decoder's
		return st, p.err
	}
	if err != nil {
		return st, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	if p.end == "" { // gzip's stream ended before the end line
		if _, err := io.Copy(io.Discard, p); err != nil {
			return st, err
		}
		if p.end == "" {
			return st, ErrCut
		}
	}
	return st, checkEnd(p.end, cw.n, sum)
}

// checkEnd compares the end line's size and checksum with what was decoded.
func checkEnd(end string, n int64, sum hash.Hash) error {
	var size int64 = -1
	var want string
	for _, f := range strings.Fields(strings.TrimSuffix(strings.TrimPrefix(end, endPrefix), endSuffix)) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "bytes":
			size, _ = strconv.ParseInt(v, 10, 64)
		case "sha256":
			want = v
		}
	}
	if size < 0 || want == "" {
		return fmt.Errorf("%w: its end marker %q lacks bytes= or sha256=", ErrDamaged, end)
	}
	if size != n {
		return fmt.Errorf("%w: %d bytes decoded, the end marker says %d", ErrDamaged, n, size)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != want {
		return fmt.Errorf("%w: checksum %s, the end marker says %s", ErrDamaged, got, want)
	}
	return nil
}

// payload reads the base64 lines after a begin line, without their
// newlines, up to the end line, which it keeps.
type payload struct {
	br   *bufio.Reader
	buf  []byte
	end  string
	err  error
	n    int64
	done bool
}

func (p *payload) Read(b []byte) (int, error) {
	for len(p.buf) == 0 {
		if p.done {
			return 0, io.EOF
		}
		line, err := readLine(p.br)
		switch {
		case err == io.EOF:
			p.done, p.err = true, ErrCut
			return 0, p.err
		case err != nil:
			p.done, p.err = true, err
			return 0, err
		case strings.HasPrefix(line, endPrefix) && strings.HasSuffix(line, endSuffix):
			p.done, p.end = true, line
			return 0, io.EOF
		case line == Begin:
			p.done, p.err = true, fmt.Errorf("%w: a begin marker inside the run file (two runs printed into one output?)", ErrDamaged)
			return 0, p.err
		}
		p.n += int64(len(line)) + 1
		p.buf = []byte(line)
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}

// readLine returns the next line without its newline (and a carriage
// return before it), however long; io.EOF only when nothing is left.
func readLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err == io.EOF && line != "" {
		err = nil
	}
	return strings.TrimRight(line, "\r\n"), err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
