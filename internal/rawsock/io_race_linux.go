//go:build race

package rawsock

import "syscall"

// Under the race detector, reads and writes go through package syscall,
// which tells the detector about the order they impose (io_linux.go has
// the raw ones).

// Read reads from the non-blocking socket fd.
func Read(fd int, b []byte) (int, error) { return syscall.Read(fd, b) }

// Write writes to the non-blocking socket fd.
func Write(fd int, b []byte) (int, error) { return syscall.Write(fd, b) }
