package replayer

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// PlanFlags are the load flags of `replay run`: one model (--vus or
// --stage, --rate, --speed), bounded by --duration and --iterations.
type PlanFlags struct {
	VUs        int
	Duration   time.Duration
	Rate       string
	Iterations int
	Stages     []string
	Speed      float64
}

// AddFlags registers the flags on f, with their defaults.
func (o *PlanFlags) AddFlags(f *pflag.FlagSet) {
	f.IntVar(&o.VUs, "vus", 1, "closed model: `N` virtual users")
	f.DurationVar(&o.Duration, "duration", 0, "run for `D` (e.g. 30s)")
	f.StringVar(&o.Rate, "rate", "", "open model: `R` requests per unit (200/s, 50/1s, 1000/m)")
	f.IntVar(&o.Iterations, "iterations", 0, "send `N` passes over the recorded requests")
	f.StringArrayVar(&o.Stages, "stage", nil, "closed model: ramp to N virtual users over D, `D:N` (repeatable, e.g. --stage 30s:10 --stage 1m:20)")
	f.Float64Var(&o.Speed, "speed", 0, "as recorded: replay the recorded arrival times `X` times faster (1 as recorded)")
}

// FlagNames name a plan's fields as PlanFlags' flags (and --explain,
// --max-inflight of the same command).
var FlagNames = map[string]string{
	FieldVUs: "--vus", FieldStages: "--stage", FieldRate: "--rate", FieldSpeed: "--speed",
	FieldDuration: "--duration", FieldIterations: "--iterations", FieldExplain: "--explain",
	FieldMaxInFlight: "--max-inflight",
}

// Plan validates the flags into a plan; changed tells the flags given. An
// error is one line naming the flag, after cmd ("run: --vus 0: want at
// least 1"), and wraps ErrPlan: bad usage.
func (o *PlanFlags) Plan(cmd string, changed func(string) bool) (LoadPlan, error) {
	p := LoadPlan{Duration: o.Duration, Iterations: o.Iterations, Speed: o.Speed}
	bad := func(format string, args ...any) (LoadPlan, error) {
		return p, fmt.Errorf("%s: %w", cmd, flagError(fmt.Sprintf(format, args...)))
	}
	if changed("vus") {
		p.VUs = o.VUs
		if o.VUs <= 0 {
			return bad("--vus %d: want at least 1", o.VUs)
		}
	}
	if o.Rate != "" {
		r, err := ParseRate(o.Rate)
		if err != nil {
			return bad("--rate: %v", err)
		}
		p.Rate = r
	}
	for _, s := range o.Stages {
		st, err := ParseStage(s)
		if err != nil {
			return bad("--stage: %v", err)
		}
		p.Stages = append(p.Stages, st)
	}
	switch {
	case changed("speed") && o.Speed <= 0:
		return bad("--speed %g: want a positive factor, e.g. 1 or 2", o.Speed)
	case changed("duration") && o.Duration <= 0:
		return bad("--duration %s: want a positive duration", o.Duration)
	case changed("iterations") && o.Iterations <= 0:
		return bad("--iterations %d: want at least 1", o.Iterations)
	}
	if msg, ok := PlanMessage(p.Validate(), FlagNames); ok {
		return bad("%s", msg)
	}
	return p, nil
}

// flagError is a bad flag value, said in one line; it is an ErrPlan.
type flagError string

func (e flagError) Error() string        { return string(e) }
func (e flagError) Is(target error) bool { return target == ErrPlan }
