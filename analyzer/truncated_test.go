package analyzer

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

func TestTruncatedNotes(t *testing.T) {
	info := snapshots.RunInfo{
		Truncated: map[string]int64{"POST /upload": 3, "PUT /files/{id}": 1, "POST /import": 3},
		Wiring:    &snapshots.Wiring{MockAddr: "127.0.0.1:1", MockTruncated: 2},
	}
	want := []string{
		"POST /import: 3 recorded requests replayed with their body cut at recording (--allow-truncated).",
		"POST /upload: 3 recorded requests replayed with their body cut at recording (--allow-truncated).",
		"PUT /files/{id}: 1 recorded request replayed with its body cut at recording (--allow-truncated).",
		"Mock: 2 upstream calls were refused (502): the recorded response body was cut at recording; record again with a larger --body-limit, or pass --allow-truncated.",
	}
	if diff := cmp.Diff(want, TruncatedNotes(info, "")); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	info.Wiring.MockTruncated, info.Wiring.MockTruncatedServed = 1, true
	if got, want := TruncatedMockNote(info, "candidate"), "Mock (candidate): 1 upstream call was served a recorded response body cut at recording (--allow-truncated)."; got != want {
		t.Errorf("mock note %q, want %q", got, want)
	}
	if got := TruncatedNotes(snapshots.RunInfo{}, ""); len(got) != 0 {
		t.Errorf("a run with nothing cut has notes %q", got)
	}
}
