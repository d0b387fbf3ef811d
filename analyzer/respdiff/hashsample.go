package respdiff

import "github.com/replaykit/replay/snapshots"

// MaxHashedRows is the most hash counts a side keeps (HashSampler): about
// 12 MiB of them, and as much again to compare them.
const MaxHashedRows = 1 << 18

// HashSampler keeps the hash counts of a run's answers, by endpoint, in
// bounded memory: all of them up to MaxHashedRows, else those of 1 in 2^k
// of the exchanges, k the least that keeps them under it. The exchanges
// kept at 2^k are among those kept at 2^(k-1), so two sides sampled apart
// still meet on every exchange of the coarser sample.
type HashSampler struct {
	Max   int // MaxHashedRows when 0
	shift uint
	n     int
	sides map[*Side]bool
}

// Add adds h to side s (the side of h's endpoint) when its exchange is in
// the sample, thinning every side's hashes when they grow past Max.
func (hs *HashSampler) Add(s *Side, h snapshots.ResponseHash) {
	if !hs.keep(h.ExchangeID) {
		return
	}
	if hs.sides == nil {
		hs.sides = map[*Side]bool{}
	}
	hs.sides[s] = true
	s.Hashes = append(s.Hashes, h)
	hs.n++
	limit := hs.Max
	if limit <= 0 {
		limit = MaxHashedRows
	}
	for hs.n > limit && hs.shift < 62 {
		hs.shift++
		hs.n = 0
		for side := range hs.sides {
			kept := side.Hashes[:0]
			for _, h := range side.Hashes {
				if hs.keep(h.ExchangeID) {
					kept = append(kept, h)
				}
			}
			clear(side.Hashes[len(kept):])
			side.Hashes = kept
			hs.n += len(kept)
		}
	}
}

// OneIn returns the 1-in-N of the exchanges kept: 1 when all are. Set it
// as every side's HashedOneIn once all are added.
func (hs *HashSampler) OneIn() int64 {
	if hs.shift == 0 {
		return 1
	}
	return 1 << hs.shift
}

// keep reports whether exchange id is in the sample of 1 in 2^shift.
func (hs *HashSampler) keep(id int64) bool {
	return hs.shift == 0 || mix(uint64(id))&(1<<hs.shift-1) == 0
}

// mix is SplitMix64's finalizer: exchange IDs, consecutive, spread evenly.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
