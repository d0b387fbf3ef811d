package replayer

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// pollReader reads a connection's socket for its bufio.Reader and, when
// given a request to send (pending), writes it inside the same wait: one
// RawConn.Read whose first call writes the request and asks the poller to
// wait, and whose next calls read the answer. Writing with net.Conn.Write
// and then reading with net.Conn.Read tries a read at once, which finds
// nothing (EAGAIN) nearly every time since the target has not answered yet:
// a third of the fast path's system calls (one write, two reads and a
// fraction of an epoll_wait per request; wrk makes one read).
//
// The wait has to begin before the write: RawConn.Read forgets the
// readiness the poller saw before it began, so a wait begun after the write
// could miss an answer that came back at once. A request that does not go
// out whole at once (a full socket buffer) is finished by net.Conn.Write,
// which waits for the socket under the write deadline, and the answer is
// then read as net.Conn.Read does.
type pollReader struct {
	nc      net.Conn
	rc      syscall.RawConn
	pending []byte // a request to write before the next read; nil: none

	// The state of one RawConn.Read, kept here with step bound once so
	// that a read allocates nothing (a closure passed to RawConn.Read
	// escapes, with every variable it captures).
	step  func(fd uintptr) bool
	req   []byte // to write first; nil: only read
	buf   []byte // to read into
	wrote int
	n     int
	rerr  error
}

func newPollReader(nc net.Conn, rc syscall.RawConn) *pollReader {
	p := &pollReader{nc: nc, rc: rc}
	p.step = p.do
	return p
}

func (p *pollReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	req := p.pending
	p.pending = nil
	if req != nil {
		wrote, n, err := p.raw(req, b)
		if wrote == len(req) || err != nil {
			return n, err
		}
		// Short: finish the request, then read the answer.
		if _, err := p.nc.Write(req[wrote:]); err != nil {
			return 0, err
		}
	}
	_, n, err := p.raw(nil, b)
	return n, err
}

// raw runs one RawConn.Read: it writes req first when set and, once req
// went out whole, waits for the answer and reads it into b. wrote <
// len(req) without an error: the rest is to be written.
func (p *pollReader) raw(req, b []byte) (wrote, n int, err error) {
	p.req, p.buf, p.wrote, p.n, p.rerr = req, b, 0, 0, nil
	err = p.rc.Read(p.step)
	wrote, n, rerr := p.wrote, p.n, p.rerr
	p.req, p.buf, p.rerr = nil, nil, nil
	if req != nil && wrote < len(req) && err == nil && rerr == nil {
		return wrote, 0, nil
	}
	n, err = p.result(n, rerr, err)
	return wrote, n, err
}

// do is RawConn.Read's function: false asks it to wait until the socket
// is readable and call again.
func (p *pollReader) do(fd uintptr) bool {
	if p.req != nil {
		req := p.req
		p.req = nil
		var werr error
		for {
			p.wrote, werr = syscall.Write(int(fd), req)
			if werr != syscall.EINTR {
				break
			}
		}
		p.wrote = max(p.wrote, 0)
		if werr != nil && werr != syscall.EAGAIN {
			p.rerr = &net.OpError{Op: "write", Net: "tcp", Source: p.nc.LocalAddr(), Addr: p.nc.RemoteAddr(), Err: os.NewSyscallError("write", werr)}
			return true
		}
		return p.wrote < len(req) // sent whole: wait for the answer
	}
	for {
		p.n, p.rerr = syscall.Read(int(fd), p.buf)
		if p.rerr != syscall.EINTR {
			break
		}
	}
	return p.rerr != syscall.EAGAIN
}

// result turns a raw read's outcome into Read's, with the errors
// net.Conn.Read returns.
func (p *pollReader) result(n int, rerr, err error) (int, error) {
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) {
			oe.Op = "read"
		}
		return 0, err
	}
	if rerr != nil {
		var oe *net.OpError
		if errors.As(rerr, &oe) {
			return 0, rerr
		}
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: p.nc.LocalAddr(), Addr: p.nc.RemoteAddr(), Err: os.NewSyscallError("read", rerr)}
	}
	if n <= 0 {
		return 0, io.EOF
	}
	return n, nil
}
