package analyzer

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

func TestStateNotes(t *testing.T) {
	info := snapshots.RunInfo{State: &snapshots.State{
		RedactedRefused: 4,
		TokenRetries:    1,
		Links: []snapshots.Link{
			{From: "$.id of POST /transactions/random", To: "path of GET /transactions/{id}", Requests: 20, Resolved: 20},
			{From: "Location of POST /orders", To: "path of GET /orders/{id}", Requests: 5, Resolved: 2, NotFound: 3, Why: "its source was answered 500"},
		},
	}}
	want := []string{
		"candidate: 1 request answered 401 got a fresh token and was sent again once (counted once, with the second answer).",
		"candidate: Link: $.id of POST /transactions/random → path of GET /transactions/{id}: 20 of 20.",
		"candidate: Link: Location of POST /orders → path of GET /orders/{id}: 2 of 5; 3 unresolved (its source was answered 500), sent with the recorded value, 3 of them answered 404: the id came from Location of POST /orders.",
	}
	if diff := cmp.Diff(want, StateNotes(info, "candidate")); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	run := StateNotes(info, "")
	if len(run) != 4 || run[0] != "4 requests with a credential redacted at recording were answered 401 or 403: "+RedactedAdvice+"." {
		t.Errorf("a run's notes %q; want the refusal first", run)
	}
	if n := StateNotes(snapshots.RunInfo{}, ""); n != nil {
		t.Errorf("notes of a run without state: %q", n)
	}
}

// A side refused for want of a credential makes the comparison
// inconclusive: a fault naming the side and what to give.
func TestAuthFaults(t *testing.T) {
	base := snapshots.RunInfo{Name: "baseline"}
	cand := snapshots.RunInfo{Name: "candidate", State: &snapshots.State{RedactedRefused: 3}}
	got := AuthFaults(base, cand)
	want := []Fault{{Side: "candidate", Kind: FaultAuth, Text: "the candidate: 3 requests with a credential redacted at recording were answered 401 or 403: " + RedactedAdvice + "."}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("faults (-want +got):\n%s", diff)
	}
	if n := StateNotes(cand, "candidate"); len(n) != 0 {
		t.Errorf("notes %q; want the refusal as a fault only", n)
	}
}
