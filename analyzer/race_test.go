//go:build race

package analyzer

// raceEnabled: the race detector slows the statistical loops tenfold, so
// the many-seed tests run fewer seeds under it (all of them without).
const raceEnabled = true
