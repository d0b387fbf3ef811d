package conntrack

import (
	"bufio"
	"net"
	"net/http"
)

// Writer is an http.ResponseWriter whose Hijack puts the hijacked connection
// in Set. Hand it to a handler that hijacks, such as goproxy's CONNECT.
type Writer struct {
	http.ResponseWriter
	// Set receives the hijacked connections; it must not be nil.
	Set *Set
	// ErrClosed is what Hijack returns, having closed the connection, once
	// Set is closed; it names the proxy, e.g. "mock server closed".
	ErrClosed error
	// Timeouts bound the hijacked connection when it is an intercepted
	// tunnel (see Timeouts); zero leaves it alone.
	Timeouts Timeouts
}

var _ http.Hijacker = (*Writer)(nil)

// Hijack hijacks the underlying connection and tracks it in w.Set.
func (w *Writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	tc := w.Set.AddTimed(c, w.Timeouts)
	if tc == nil {
		_ = c.Close()
		return nil, nil, w.ErrClosed
	}
	return tc, rw, nil
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
