package rawsock

import (
	"fmt"
	"net"
	"syscall"
)

// Dup returns a non-blocking, close-on-exec duplicate of c's socket, for
// an event loop's own epoll set; c keeps its own descriptor.
func Dup(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("dup socket: %T has no file descriptor", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("dup socket: %w", err)
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		if e != 0 {
			derr = e
			return
		}
		nfd = int(r)
	}); err != nil {
		return -1, fmt.Errorf("dup socket: %w", err)
	}
	if derr != nil {
		return -1, fmt.Errorf("dup socket: %w", derr)
	}
	if err := syscall.SetNonblock(nfd, true); err != nil {
		syscall.Close(nfd)
		return -1, fmt.Errorf("dup socket: %w", err)
	}
	return nfd, nil
}
