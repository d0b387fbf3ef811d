package replayer

// An HTTP/1.1 response parser for the event loops (evloop_linux.go): the
// reading of h1read.go, fed by whatever bytes have arrived instead of
// pulling them from a bufio.Reader, with the same checks, the same limits
// (a line longer than the 16 KiB buffer is cut to its first 128 bytes) and
// the same errors.

import (
	"bytes"
	"fmt"
	"io"
)

// respParser's states.
const (
	psStatus    = iota // the status line
	psHeader           // header lines
	psBody             // rem bytes of body (Content-Length)
	psChunkSize        // a chunk-size line
	psChunkData        // rem bytes of a chunk
	psChunkEnd         // the CRLF after a chunk
	psTrailer          // trailer lines
	psClose            // body until the server closes
	psDone
)

// loopReadSize is a connection's read buffer on a loop: bufio's in h1Conn.
const loopReadSize = 16 << 10

// respParser reads one response (after any 1xx) and its body.
type respParser struct {
	st     int
	head   bool // a HEAD request: no body
	tap    *bodyTap
	hd     respHead
	status int
	rem    int64
	n      int64 // body bytes
	got    int   // bytes taken

	long    bool // in a line longer than the buffer: kept cut in scratch
	scratch [128]byte
	slen    int
}

func (p *respParser) reset(head bool, tap *bodyTap) {
	*p = respParser{head: head, tap: tap}
	tap.restart()
}

// feed takes what it can of b (the bytes read and not taken yet; full: b
// fills the read buffer) and returns how many bytes it took, and whether
// the response is complete or malformed. It takes everything but the
// start of a line not complete yet.
func (p *respParser) feed(b []byte, full bool) (used int, done bool, err error) {
	for used < len(b) && p.st != psDone {
		switch p.st {
		case psBody, psChunkData:
			k := int(min(p.rem, int64(len(b)-used)))
			if p.tap != nil {
				p.tap.Write(b[used : used+k])
			}
			used += k
			p.got += k
			p.n += int64(k)
			if p.rem -= int64(k); p.rem == 0 {
				if p.st == psBody {
					p.st = psDone
				} else {
					p.st = psChunkEnd
				}
			}
		case psClose:
			if p.tap != nil {
				p.tap.Write(b[used:])
			}
			p.got += len(b) - used
			p.n += int64(len(b) - used)
			used = len(b)
		default:
			line, k, ok := p.line(b[used:], full && used == 0)
			used += k
			if !ok {
				return used, false, nil
			}
			if err := p.onLine(line); err != nil {
				return used, true, err
			}
		}
	}
	return used, p.st == psDone, nil
}

// line returns the next line of b without its CRLF, and how many bytes it
// took; ok is false when the line is not complete yet.
func (p *respParser) line(b []byte, full bool) (line []byte, used int, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if p.long {
		if i < 0 {
			p.got += len(b)
			return nil, len(b), false
		}
		p.got += i + 1
		p.long = false
		return p.scratch[:p.slen], i + 1, true
	}
	if i < 0 {
		if full { // as bufio.ErrBufferFull in readLine
			p.slen = copy(p.scratch[:], b)
			p.long = true
			p.got += len(b)
			return nil, len(b), false
		}
		return nil, 0, false
	}
	p.got += i + 1
	line = b[:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, i + 1, true
}

// onLine handles a complete line in the current state.
func (p *respParser) onLine(line []byte) error {
	switch p.st {
	case psStatus:
		var err error
		p.hd = respHead{cl: -1}
		p.status, p.hd.keep, err = parseStatusLine(line)
		if err != nil {
			return err
		}
		p.st = psHeader
	case psHeader:
		if len(line) > 0 {
			return p.hd.header(line, p.tap)
		}
		return p.bodyStart()
	case psChunkSize:
		size, err := parseChunkSize(line)
		if err != nil {
			return err
		}
		if p.rem, p.st = size, psChunkData; size == 0 {
			p.st = psTrailer
		}
	case psChunkEnd:
		if len(line) != 0 {
			return readErr(fmt.Errorf("%w: no CRLF after a chunk", errMalformed), p.got)
		}
		p.st = psChunkSize
	case psTrailer:
		if len(line) == 0 {
			p.st = psDone
		}
	}
	return nil
}

// bodyStart is the end of the headers.
func (p *respParser) bodyStart() error {
	if p.status < 200 {
		if p.status == 101 {
			return fmt.Errorf("%w: unexpected 101 Switching Protocols", errMalformed)
		}
		p.st = psStatus // 100 Continue, 103 Early Hints: the response follows
		p.tap.restart()
		return nil
	}
	switch {
	case p.head || p.status == 204 || p.status == 304:
		p.st = psDone
	case p.hd.chunked:
		p.st = psChunkSize
	case p.hd.cl > 0:
		p.st, p.rem = psBody, p.hd.cl
	case p.hd.cl == 0:
		p.st = psDone
	default:
		p.st = psClose
		p.hd.keep = false
	}
	return nil
}

// eof is the server's close, with pending bytes read and not taken (the
// start of a line): done when the body ran until the close, else an error.
func (p *respParser) eof(pending int) (done bool, err error) {
	p.got += pending
	if p.st == psClose {
		p.st = psDone
		return true, nil
	}
	return false, readErr(io.EOF, p.got)
}

// keep reports whether the connection can carry another request.
func (p *respParser) keep() bool { return p.hd.keep && p.st == psDone }
