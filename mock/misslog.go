package mock

import "slices"

// MissLogLimit bounds the distinct missed requests MissLog keeps; further
// misses are still counted.
const MissLogLimit = 256

// Misses returns the number of requests to mocked services that matched
// nothing recorded.
func (s *Server) Misses() int64 { return s.misses.Load() }

// MissLog returns the distinct missed requests in the order first seen (at
// most MissLogLimit), each with its Count. The slice and its elements are
// copies.
func (s *Server) MissLog() []*MissError {
	s.missMu.Lock()
	defer s.missMu.Unlock()
	out := make([]*MissError, len(s.missLog))
	for i, me := range s.missLog {
		c := *me
		c.Differences = slices.Clone(me.Differences)
		out[i] = &c
	}
	return out
}

// miss counts a miss of q and returns its explanation. A request already
// explained (same method, service, path, query and body) is only counted.
func (s *Server) miss(q *request) *MissError {
	s.misses.Add(1)
	k := q.exactKey()
	s.missMu.Lock()
	prev, ok := s.missByRq[k]
	if ok {
		prev.Count++
		me := *prev
		s.missMu.Unlock()
		return &me
	}
	s.missMu.Unlock()

	me := s.m.explain(q)
	s.log.Info("mock miss", "request", me.Request, "closest", me.Closest, "differences", me.Differences)
	s.missMu.Lock()
	defer s.missMu.Unlock()
	if prev, ok := s.missByRq[k]; ok { // explained meanwhile by another goroutine
		prev.Count++
		return me
	}
	if len(s.missLog) < MissLogLimit {
		kept := *me
		s.missLog = append(s.missLog, &kept)
		s.missByRq[k] = &kept
	}
	return me
}
