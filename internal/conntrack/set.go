package conntrack

import (
	"net"
	"sync"
)

// Set is the hijacked connections a proxy has handed out. Its zero value is
// an empty, open set; it must not be copied after first use.
type Set struct {
	mu     sync.Mutex
	conns  map[*conn]struct{}
	timed  map[string]*conn // the connections with Timeouts, by client address
	closed bool
}

// Add puts c in the set and returns it wrapped, so that closing it takes it
// out again. Once the set is closed it returns nil and leaves c to the
// caller.
func (s *Set) Add(c net.Conn) net.Conn { return s.AddTimed(c, Timeouts{}) }

// AddTimed is Add for a connection bounded by t (see Timeouts and Watch):
// its handshake and first request's headers must come within t.ReadHeader.
func (s *Set) AddTimed(c net.Conn, t Timeouts) net.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	tc := &conn{Conn: c, s: s, t: t}
	s.conns[tc] = struct{}{}
	if t != (Timeouts{}) {
		if s.timed == nil {
			s.timed = map[string]*conn{}
		}
		s.timed[c.RemoteAddr().String()] = tc
		tc.arm(t.ReadHeader)
	}
	return tc
}

// Close closes every connection in the set, and Add refuses new ones from
// then on. It is safe to call more than once.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Closed reports whether Close has been called.
func (s *Set) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Len returns the number of connections in the set.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// conn is a tracked connection: it leaves its set when closed.
type conn struct {
	net.Conn
	s    *Set
	once sync.Once
	t    Timeouts
	tmu  sync.Mutex
	st   timer
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		if c.s.timed[c.RemoteAddr().String()] == c {
			delete(c.s.timed, c.RemoteAddr().String())
		}
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}
