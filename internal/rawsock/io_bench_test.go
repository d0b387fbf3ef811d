package rawsock

import (
	"net"
	"syscall"
	"testing"
)

// BenchmarkWriteRead sends one byte through a loopback TCP connection and
// reads it back, with the scheduler's system-call bookkeeping (syscall) and
// without it (raw).
func BenchmarkWriteRead(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cfd, err := Dup(c)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Close(cfd)
	sfd, err := Dup(s)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Close(sfd)
	buf := make([]byte, 64)
	for _, tc := range []struct {
		name        string
		read, write func(int, []byte) (int, error)
	}{
		{"syscall", syscall.Read, syscall.Write},
		{"raw", Read, Write},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := tc.write(cfd, buf[:1]); err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := tc.read(sfd, buf); err == nil {
						break
					} else if err != syscall.EAGAIN {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
