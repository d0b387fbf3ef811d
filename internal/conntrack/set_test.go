package conntrack

import (
	"net"
	"testing"
)

func TestSetClosesWhatItHolds(t *testing.T) {
	var s Set
	a, b := net.Pipe()
	defer b.Close()
	c := s.Add(a)
	if c == nil || s.Len() != 1 {
		t.Fatalf("Add: %v, %d in the set", c, s.Len())
	}
	s.Close()
	if !s.Closed() || s.Len() != 0 {
		t.Errorf("after Close: closed %v, %d in the set", s.Closed(), s.Len())
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Error("a connection in the set still writes after Close")
	}
	x, y := net.Pipe()
	defer x.Close()
	defer y.Close()
	if c := s.Add(x); c != nil {
		t.Error("Add after Close tracked a connection")
	}
}

func TestClosedConnLeavesTheSet(t *testing.T) {
	var s Set
	a, b := net.Pipe()
	defer b.Close()
	c := s.Add(a)
	c.Close()
	c.Close()
	if s.Len() != 0 {
		t.Errorf("%d in the set after the connection closed", s.Len())
	}
}
