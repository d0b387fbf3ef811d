package listen

import (
	"fmt"
	"net"
	"strconv"
)

// Loopback is the host a listen address without one gets.
const Loopback = "127.0.0.1"

// Addr checks a listen address, "[HOST]:PORT" or a bare "PORT", and
// returns it with Loopback as its host when it names none: binding every
// interface takes an explicit "0.0.0.0:PORT" or "[::]:PORT".
func Addr(s string) (string, error) {
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		s = ":" + s
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("listen address %q is not [HOST]:PORT", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("listen address %q has no valid port", s)
	}
	if host == "" {
		host = Loopback
	}
	return net.JoinHostPort(host, port), nil
}

// Exposed reports whether a listen address is reachable from other
// machines: its host is neither empty nor a loopback address or "localhost".
func Exposed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" || host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// Warning returns nil when the listener l opened for addr is on loopback,
// else the one-line warning that what (e.g. "outbound proxy") is reachable
// from the network and what that lets others do (reach, e.g. "it forwards
// requests to any host").
func Warning(what, addr string, l net.Addr, reach string) error {
	if !Exposed(addr) {
		return nil
	}
	host, _, _ := net.SplitHostPort(addr)
	shown := addr
	if _, port, err := net.SplitHostPort(l.String()); err == nil {
		shown = net.JoinHostPort(host, port)
	}
	return fmt.Errorf("the %s listens on %s, reachable from the network: %s", what, shown, reach)
}
