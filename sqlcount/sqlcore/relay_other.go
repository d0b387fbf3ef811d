//go:build !linux

package sqlcore

import (
	"context"
	"net"
)

// Elsewhere than on Linux, connections are relayed by goroutines.

type loops struct{}

type eventLoop struct{}

// OwnProcess changes nothing where there are no event loops.
func OwnProcess(*Config) {}

func newLoops(*Proxy) *loops { return &loops{} }

func (*loops) get() *eventLoop { return nil }

func (*loops) close() {}

func (p *Proxy) relayLoop(context.Context, *eventLoop, net.Conn, net.Conn, *feeds) (cerr, serr error, ok bool) {
	return nil, nil, false
}
