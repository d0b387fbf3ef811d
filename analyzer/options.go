package analyzer

import (
	"errors"
	"fmt"
	"time"

	"github.com/replaykit/replay/analyzer/respdiff"
)

// CompareOptions tune Compare. Zero values mean the documented defaults;
// to switch a minimum off, give it a tiny positive value.
type CompareOptions struct {
	// Confidence is the two-sided level of the bootstrap intervals; zero
	// means 0.99.
	Confidence float64
	// Resamples is the number of bootstrap resamples; zero means 2000.
	Resamples int
	// Seed seeds the bootstrap so that a comparison is reproducible; zero
	// means 1.
	Seed uint64
	// MinSamples is the fewest load-phase requests each side needs for a
	// latency verdict; zero means 30.
	MinSamples int
	// MinSamplesP99 is the fewest each side needs before the p99 is judged
	// too; zero means 500.
	MinSamplesP99 int
	// MinChange is the smallest absolute p95 change that counts; zero
	// means 5ms.
	MinChange time.Duration
	// MinChangeP99 is the smallest absolute p99 change that counts; zero
	// means 10ms.
	MinChangeP99 time.Duration
	// MinRelative is the smallest relative p95 change that counts (0.10 is
	// 10%); zero means 0.10.
	MinRelative float64
	// MinRelativeP99 is the smallest relative p99 change that counts; zero
	// means 0.25.
	MinRelativeP99 float64
	// MinRelativeSequential replaces smaller relative minimums when the runs
	// were not interleaved: drift between two separate runs is not in the
	// intervals (separate runs of one build differ by tens of percent on a
	// noisy machine), so a larger change is asked for. Zero means 0.5.
	MinRelativeSequential float64
	// MinCPURelative is the smallest relative change of CPU time per
	// request that counts (0.05 is 5%); zero means MinRelative. CPU time
	// is steadier than latency, so a smaller change can be asked of it.
	MinCPURelative float64
	// MinBlocks is the fewest slice pairs for the paired-slices bootstrap;
	// with fewer, each side is resampled independently. Zero means 8.
	MinBlocks int
	// MinSQLIncrease is the smallest rise in statements per request that is
	// a regression on its own; zero means 1. With counts from the load phase
	// on either side (not exact), the rise must also be at least 50%.
	MinSQLIncrease float64
	// MinUpstreamIncrease is the smallest rise in calls to mocked services
	// per request that is a regression on its own; zero means 1. With
	// counts from the load phase on either side, the rise must also be at
	// least 50%.
	MinUpstreamIncrease float64
	// MinFailureIncrease is the smallest rise of the failure rate, in
	// percentage points, that counts; zero means 1.
	MinFailureIncrease float64
	// FailureZ is the one-sided z score a failure-rate change needs
	// (two-proportion test); zero means 2.58 (p < 0.005).
	FailureZ float64
	// NPlusOneMin is the fewest runs per request of one fingerprint for an
	// N+1 explanation; zero means 3.
	NPlusOneMin float64
	// Responses are the rules of the comparison of answers (paths to
	// ignore, arrays to compare as sets, intended differences, headers);
	// the zero value compares the default headers, status and bodies.
	Responses respdiff.Rules
	// Recorded, when set, gives CompareRuns the recording's answers
	// (*snapshots.Snapshot): what differs between them and the baseline's
	// is noise too. Nil learns from the baseline alone.
	Recorded RecordedSource
	// FailOnInconclusive makes an inconclusive endpoint fail the
	// comparison as a regression does (replay compare --fail-on
	// inconclusive); false: only regressions and missed goals fail it.
	FailOnInconclusive bool
}

// WithDefaults returns o with its zero fields filled with the defaults, or
// an error for a value out of range.
func (o CompareOptions) WithDefaults() (CompareOptions, error) { return o.withDefaults() }

// withDefaults fills zero fields and validates the rest.
func (o CompareOptions) withDefaults() (CompareOptions, error) {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Confidence, 0.99)
	defInt(&o.Resamples, 2000)
	if o.Seed == 0 {
		o.Seed = 1
	}
	defInt(&o.MinSamples, 30)
	defInt(&o.MinSamplesP99, 500)
	if o.MinChange == 0 {
		o.MinChange = 5 * time.Millisecond
	}
	if o.MinChangeP99 == 0 {
		o.MinChangeP99 = 10 * time.Millisecond
	}
	def(&o.MinRelative, 0.10)
	def(&o.MinRelativeP99, 0.25)
	def(&o.MinRelativeSequential, 0.5)
	def(&o.MinCPURelative, o.MinRelative)
	defInt(&o.MinBlocks, 8)
	def(&o.MinSQLIncrease, 1)
	def(&o.MinUpstreamIncrease, 1)
	def(&o.MinFailureIncrease, 1)
	def(&o.FailureZ, 2.58)
	def(&o.NPlusOneMin, 3)
	switch {
	case o.Confidence <= 0 || o.Confidence >= 1:
		return o, fmt.Errorf("confidence %g is not between 0 and 1", o.Confidence)
	case o.Resamples < 100:
		return o, fmt.Errorf("resamples %d: need at least 100", o.Resamples)
	case o.MinSamples < 2 || o.MinSamplesP99 < 2:
		return o, errors.New("minimum samples must be at least 2")
	case o.MinChange < 0 || o.MinChangeP99 < 0:
		return o, errors.New("minimum changes must not be negative")
	case o.MinRelative < 0 || o.MinRelativeP99 < 0 || o.MinRelativeSequential < 0 || o.MinCPURelative < 0:
		return o, errors.New("minimum relative changes must not be negative")
	case o.MinBlocks < 2:
		return o, fmt.Errorf("minimum blocks %d: need at least 2", o.MinBlocks)
	case o.MinSQLIncrease < 0 || o.MinUpstreamIncrease < 0 || o.MinFailureIncrease < 0 || o.FailureZ < 0 || o.NPlusOneMin < 0:
		return o, errors.New("SQL, failure and N+1 minimums must not be negative")
	}
	if err := o.Responses.Validate(); err != nil {
		return o, err
	}
	return o, nil
}
