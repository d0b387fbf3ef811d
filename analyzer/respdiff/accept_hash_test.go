package respdiff

import (
	"testing"

	"github.com/replaykit/replay/snapshots"
)

// TestAcceptedChangeCoversHashes: a change --accept-diff names changes the
// bytes of every answer, so the answers beyond the sample differ by hash
// too; they are the accepted change, not a regression.
func TestAcceptedChangeCoversHashes(t *testing.T) {
	side := func(body string) *Side {
		s := answers(3, func(int64, int) string { return body })
		s.Hashes = []snapshots.ResponseHash{{ExchangeID: 1, Status: 200, Hash: snapshots.HashBody([]byte(body)), Count: 10}}
		return s
	}
	base, cand := side(`{"id":1,"customer":"ada"}`), side(`{"id":1}`)
	s := compile(t, Rules{Accept: []string{"$.customer"}}).Endpoint(base, cand, nil)
	if s.Differing != 0 || len(s.Accepted) == 0 {
		t.Fatalf("differing %d (%+v), accepted %+v; want the accepted change alone", s.Differing, s.Differences, s.Accepted)
	}
	if s := compile(t, Rules{}).Endpoint(base, cand, nil); s.Differing == 0 {
		t.Fatalf("without the rule nothing differs")
	}
}
