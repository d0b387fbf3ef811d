package mock

import "testing"

// TestTruncatedSentenceOne: one call is "1 call", not "1 calls".
func TestTruncatedSentenceOne(t *testing.T) {
	for allowed, want := range map[bool]string{
		true:  "1 call was served a recorded response body cut at recording (--allow-truncated)",
		false: "1 call refused (502): their recorded response body was cut at recording; record again with a larger --body-limit, or pass --allow-truncated",
	} {
		if got := TruncatedSentence(1, allowed); got != want {
			t.Errorf("allowed %v: %q, want %q", allowed, got, want)
		}
	}
	if got := plural(2, "miss"); got != "2 misses" {
		t.Errorf("plural(2, miss) = %q", got)
	}
}
