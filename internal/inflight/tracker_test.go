package inflight

import (
	"fmt"
	"sync"
	"testing"
)

// counter counts events per name.
type counter = map[string]int

func newCounter() *Tracker[counter, string] {
	return New(func(acc *counter, e string) {
		if *acc == nil {
			*acc = counter{}
		}
		(*acc)[e]++
	})
}

func TestTraceID(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	for in, want := range map[string]string{
		id:                                  id,
		"4BF92F3577B34DA6A3CE929D0E0E4736":  id,
		"00-" + id + "-00f067aa0ba902b7-01": id,
		"00-" + id + "-00f067aa0ba902bx-01": "",
		"ff-" + id + "-00f067aa0ba902b7-01": "",
		"":                                  "",
		"xyz":                               "",
		"00000000000000000000000000000000":  "",
		"4bf92f3577b34da6a3ce929d0e0e473g":  "",
	} {
		if got := TraceID(in); got != want {
			t.Errorf("TraceID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAloneInFlight: an event is the request's when it ran while that
// request was the only one in flight, and nobody's when another began or
// ended meanwhile; End says whether any event was missed meanwhile.
func TestAloneInFlight(t *testing.T) {
	tr := newCounter()
	tr.Begin(1, "")
	w := tr.Window()
	if id := tr.Attribute("", w, "a"); id != 1 {
		t.Errorf("alone: attributed to %d, want 1", id)
	}
	tr.Attribute("", tr.Window(), "a")
	w = tr.Window()
	tr.Begin(2, "") // a new window while the event runs
	if id := tr.Attribute("", w, "b"); id != 0 {
		t.Errorf("window changed during the event: attributed to %d, want 0", id)
	}
	if id := tr.Attribute("", tr.Window(), "c"); id != 0 {
		t.Errorf("two in flight, no trace: attributed to %d, want 0", id)
	}
	got, complete := tr.End(1)
	if fmt.Sprint(got) != "map[a:2]" || complete {
		t.Errorf("request 1: %v, complete %v; want map[a:2], not complete (events were missed)", got, complete)
	}
	// Request 2 is alone now; it saw the missed events, so it stays
	// incomplete whatever comes later.
	tr.Attribute("", tr.Window(), "d")
	if got, complete := tr.End(2); fmt.Sprint(got) != "map[d:1]" || complete {
		t.Errorf("request 2: %v, complete %v; want map[d:1], not complete", got, complete)
	}
	tr.Begin(3, "")
	tr.Attribute("", tr.Window(), "e")
	if got, complete := tr.End(3); fmt.Sprint(got) != "map[e:1]" || !complete {
		t.Errorf("request 3: %v, complete %v; want map[e:1], complete", got, complete)
	}
	if _, complete := tr.End(4); complete {
		t.Errorf("a request never begun is complete")
	}
	if id := tr.Attribute("", tr.Window(), "f"); id != 0 {
		t.Errorf("nothing in flight: attributed to %d", id)
	}
	// A traced event of a request that has ended goes nowhere.
	tr.Begin(5, "4bf92f3577b34da6a3ce929d0e0e4736")
	tr.Begin(6, "")
	tr.Begin(7, "")
	tr.End(5)
	if id := tr.Attribute("4bf92f3577b34da6a3ce929d0e0e4736", tr.Window(), "g"); id != 0 {
		t.Errorf("event of an ended request: attributed to %d", id)
	}
}

// TestTracedConcurrent: with many requests in flight at once, events that
// carry a trace id go to their request, and each request is complete.
func TestTracedConcurrent(t *testing.T) {
	tr := newCounter()
	const goroutines, perG = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				id := int64(g*perG + i + 1)
				trace := fmt.Sprintf("%032x", id)
				tr.Begin(id, "00-"+trace+"-00f067aa0ba902b7-01")
				for range 3 {
					if got := tr.Attribute(trace, tr.Window(), "call"); got != id {
						t.Errorf("request %d: event attributed to %d", id, got)
						return
					}
				}
				c, complete := tr.End(id)
				if c["call"] != 3 || !complete {
					t.Errorf("request %d: %v, complete %v; want 3 calls, complete", id, c, complete)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(tr.byID) != 0 || len(tr.byTrace) != 0 || tr.Window().sole != nil {
		t.Errorf("tracker not empty: %d ids, %d traces", len(tr.byID), len(tr.byTrace))
	}
}
