package respdiff

import (
	"testing"

	"github.com/replaykit/replay/snapshots"
)

// sampled adds n exchanges' hash counts (with two, two rows each: a
// second status) to a side through a sampler of max rows, the exchanges
// from id 1; hash(id) gives an exchange's body hash.
func sampled(max, n int, two bool, hash func(id int64) uint64) (*Side, *HashSampler) {
	s := &Side{}
	hs := &HashSampler{Max: max}
	for id := int64(1); id <= int64(n); id++ {
		hs.Add(s, snapshots.ResponseHash{ExchangeID: id, Endpoint: "GET /x", Status: 200, Hash: hash(id), Count: 3})
		if two {
			hs.Add(s, snapshots.ResponseHash{ExchangeID: id, Endpoint: "GET /x", Status: 500, Hash: 9, Count: 1})
		}
	}
	s.HashedOneIn = hs.OneIn()
	return s, hs
}

// TestHashSampler: a side keeps at most Max hash counts, those of 1 in
// 2^k of the exchanges (both rows of each kept), nested from one sample to
// a coarser one; a comparison of two sides sampled apart still finds the
// answers that differ, on the coarser sample, and says it sampled.
func TestHashSampler(t *testing.T) {
	same := func(int64) uint64 { return 7 }
	all, hs := sampled(0, 1000, true, same)
	if hs.OneIn() != 1 || len(all.Hashes) != 2000 {
		t.Fatalf("under the limit: 1 in %d, %d rows; want all 2000", hs.OneIn(), len(all.Hashes))
	}
	fine, fhs := sampled(1000, 5000, true, same)
	coarse, chs := sampled(300, 5000, true, same)
	for _, c := range []struct {
		s   *Side
		hs  *HashSampler
		max int
	}{{fine, fhs, 1000}, {coarse, chs, 300}} {
		if n := len(c.s.Hashes); n > c.max || n < c.max/4 || c.hs.OneIn() < 2 {
			t.Errorf("max %d: %d rows kept, 1 in %d", c.max, n, c.hs.OneIn())
		}
		rows := map[int64]int{}
		for _, h := range c.s.Hashes {
			rows[h.ExchangeID]++
			if !c.hs.keep(h.ExchangeID) {
				t.Errorf("max %d: exchange %d kept out of the sample", c.max, h.ExchangeID)
			}
		}
		for id, n := range rows {
			if n != 2 {
				t.Errorf("max %d: exchange %d has %d rows, want both", c.max, id, n)
			}
		}
	}
	inFine := map[int64]bool{}
	for _, h := range fine.Hashes {
		inFine[h.ExchangeID] = true
	}
	for _, h := range coarse.Hashes {
		if !inFine[h.ExchangeID] {
			t.Fatalf("exchange %d in the coarser sample, not in the finer one", h.ExchangeID)
		}
	}

	// The candidate answers exchanges divisible by 10 with another body:
	// found on the exchanges both samples hold, and said to be sampled.
	base, bhs := sampled(500, 5000, false, same)
	cand, khs := sampled(150, 5000, false, func(id int64) uint64 { return map[bool]uint64{true: 8, false: 7}[id%10 == 0] })
	s := compile(t, Rules{}).Endpoint(base, cand, nil)
	var want int64
	for _, h := range cand.Hashes {
		if h.ExchangeID%10 == 0 {
			want += 3
		}
	}
	if s.HashedOneIn != max(bhs.OneIn(), khs.OneIn()) || s.Differing != want || want == 0 || s.Hashed != 3*int64(len(cand.Hashes)) {
		t.Errorf("hashed %d, 1 in %d, %d differing; want %d, 1 in %d, %d", s.Hashed, s.HashedOneIn, s.Differing,
			3*len(cand.Hashes), max(bhs.OneIn(), khs.OneIn()), want)
	}
}
