//go:build !race

package rawsock

import (
	"syscall"
	"unsafe"
)

// Read reads from the non-blocking socket fd without telling the Go
// scheduler it enters a system call: such a read never blocks, and the
// bookkeeping around a blocking call (entersyscall, exitsyscall) would cost
// an event loop as much as a small read itself. Only for descriptors Dup
// made non-blocking. Under the race detector (io_race_linux.go) it is
// syscall.Read, whose annotations tell the detector that what one goroutine
// wrote to a socket happened before another read it.
func Read(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Write writes to the non-blocking socket fd as Read reads from it.
func Write(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
