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
}

func (p *pollReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	req := p.pending
	p.pending = nil
	if req != nil {
		wrote, n, err := p.writeRead(req, b)
		if wrote == len(req) || err != nil {
			return n, err
		}
		if _, err := p.nc.Write(req[wrote:]); err != nil {
			return 0, err
		}
	}
	var n int
	var rerr error
	err := p.rc.Read(func(fd uintptr) bool {
		n, rerr = readFD(fd, b)
		return rerr != syscall.EAGAIN
	})
	return p.result(n, rerr, err)
}

// writeRead writes req and, when it went out whole, waits for the answer and
// reads into b. wrote < len(req) without an error: the rest is to be
// written.
func (p *pollReader) writeRead(req, b []byte) (wrote, n int, err error) {
	var rerr error
	first := true
	err = p.rc.Read(func(fd uintptr) bool {
		if first {
			first = false
			var werr error
			for {
				wrote, werr = syscall.Write(int(fd), req)
				if werr != syscall.EINTR {
					break
				}
			}
			wrote = max(wrote, 0)
			if werr != nil && werr != syscall.EAGAIN {
				rerr = &net.OpError{Op: "write", Net: "tcp", Source: p.nc.LocalAddr(), Addr: p.nc.RemoteAddr(), Err: os.NewSyscallError("write", werr)}
				return true
			}
			return wrote < len(req) // sent whole: wait for the answer
		}
		n, rerr = readFD(fd, b)
		return rerr != syscall.EAGAIN
	})
	if wrote < len(req) && err == nil && rerr == nil {
		return wrote, 0, nil
	}
	n, err = p.result(n, rerr, err)
	return wrote, n, err
}

func readFD(fd uintptr, b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), b)
		if err != syscall.EINTR {
			return n, err
		}
	}
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
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}
