package analyzer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// TruncatedNotes are a run's sentences about bodies cut at recording (the
// recorder's --body-limit): per endpoint, the recorded requests replayed
// cut under --allow-truncated (RunInfo.Truncated), busiest first; then the
// mock's calls matched to a recorded response cut short, served or refused
// (Wiring.MockTruncated). side, when not empty, names the side in the
// mock's sentence ("baseline"). None when nothing was cut.
func TruncatedNotes(info snapshots.RunInfo, side string) []string {
	var notes []string
	eps := make([]string, 0, len(info.Truncated))
	for ep := range info.Truncated {
		eps = append(eps, ep)
	}
	slices.SortFunc(eps, func(a, b string) int {
		if d := info.Truncated[b] - info.Truncated[a]; d != 0 {
			return int(d)
		}
		return strings.Compare(a, b)
	})
	for _, ep := range eps {
		n := info.Truncated[ep]
		notes = append(notes, fmt.Sprintf("%s: %s replayed with %s body cut at recording (--allow-truncated).",
			ep, plural(n, "recorded request"), pick(n, "its", "their")))
	}
	if n := TruncatedMockNote(info, side); n != "" {
		notes = append(notes, n)
	}
	return notes
}

// TruncatedMockNote is the sentence about the mock's calls matched to a
// recorded response whose body was cut at recording; "" when none was.
func TruncatedMockNote(info snapshots.RunInfo, side string) string {
	w := info.Wiring
	if w == nil || w.MockTruncated == 0 {
		return ""
	}
	who := "Mock"
	if side != "" {
		who = "Mock (" + side + ")"
	}
	n := w.MockTruncated
	if w.MockTruncatedServed {
		return fmt.Sprintf("%s: %s %s served a recorded response body cut at recording (--allow-truncated).", who, plural(n, "upstream call"), pick(n, "was", "were"))
	}
	return fmt.Sprintf("%s: %s %s refused (502): the recorded response body was cut at recording; record again with a larger --body-limit, or pass --allow-truncated.", who, plural(n, "upstream call"), pick(n, "was", "were"))
}

func pick(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
