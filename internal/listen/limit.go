package listen

import (
	"log/slog"
	"net"
	"sync"
)

// Limit returns l holding at most o's MaxConns connections at once (l
// itself when there is no limit): Accept waits, leaving further clients in
// the kernel's backlog, until a connection closes. The first time the
// limit is reached it logs one warning naming what and the address.
//
// Waiting rather than refusing: a burst above the limit is slowed, not
// failed, and the timeouts free the slots that slow or idle clients hold.
func (o Limits) Limit(l net.Listener, what string, log *slog.Logger) net.Listener {
	n := o.Resolved().MaxConns
	if n <= 0 {
		return l
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &limited{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{}), what: what, log: log}
}

// limited is a listener with a connection limit.
type limited struct {
	net.Listener
	sem    chan struct{}
	done   chan struct{}
	closer sync.Once
	warned sync.Once
	what   string
	log    *slog.Logger
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	default:
		l.warned.Do(func() {
			l.log.Warn("connection limit reached: further connections wait until one closes (--max-conns)",
				"listener", l.what, "addr", l.Addr().String(), "limit", cap(l.sem))
		})
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limited) Close() error {
	l.closer.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn frees its slot when closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// Unwrap returns the connection accepted, for code that takes its socket
// over (the SQL counter's event loop); closing c still frees the slot.
func (c *limitedConn) Unwrap() net.Conn { return c.Conn }
