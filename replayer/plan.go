package replayer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// LoadPlan says how requests are sent in one call of Run. Exactly one load
// model applies:
//
//   - open: Rate is set; requests start at fixed intended times whatever the
//     target does, and latency counts from those times;
//   - as recorded: Speed is set; requests start at their recorded offsets
//     divided by Speed;
//   - closed (otherwise): VUs virtual users (or a ramp through Stages) each
//     send the next request as soon as the previous one is answered.
//
// Duration and Iterations bound every model; when both are zero the plan
// sends one pass over the recorded requests (Iterations 1).
type LoadPlan struct {
	// Phase labels the results; empty means snapshots.PhaseLoad.
	Phase string
	// Slice is copied into every result (interleaved comparisons); zero
	// when the run is not sliced.
	Slice int

	// VUs is the closed model's number of virtual users; zero means 1 (or,
	// with Stages, the number the ramp starts from: 0).
	VUs int
	// Stages ramp the closed model's virtual users linearly from the previous
	// target (VUs at first) to each stage's Target over its Duration, as k6
	// does. The run lasts the sum of the stages.
	Stages []Stage
	// Rate is the open model's arrival rate; zero selects another model.
	Rate Rate
	// Speed replays the recorded arrival times scaled: 1 as recorded, 2
	// twice as fast; zero selects another model.
	Speed float64

	// Duration bounds the load: no request starts after it; zero means no
	// time bound.
	Duration time.Duration
	// Iterations bounds the load to that many passes over the recorded
	// requests (Iterations × Requests() requests); zero means no bound.
	Iterations int

	// Explain, when positive, runs the explain phase first: up to Explain
	// requests of every endpoint, one at a time (see Replayer.Explain).
	Explain int

	// Progress, when set, is called as the load starts, every
	// ProgressInterval (zero: 250ms) from a goroutine of Run, and once more
	// at the end.
	Progress         func(Progress)
	ProgressInterval time.Duration
}

// ErrPlan marks an invalid load plan (for a CLI: bad usage); every
// *PlanError is one (errors.Is).
var ErrPlan = errors.New("invalid load plan")

// Plan settings, as PlanError names them.
const (
	FieldVUs         = "vus"
	FieldStages      = "stages"
	FieldRate        = "rate"
	FieldSpeed       = "speed"
	FieldDuration    = "duration"
	FieldIterations  = "iterations"
	FieldExplain     = "explain"
	FieldSlices      = "slices"
	FieldWarmup      = "warmup"
	FieldMaxInFlight = "max-inflight"
)

// PlanError is an invalid plan setting, or two that conflict, with the
// settings named by field (FieldVUs, …) so that a caller can name them its
// own way (a CLI names its flags).
type PlanError struct {
	// Field is the setting at fault; Other, when set, the one it
	// conflicts with.
	Field, Other string
	// Value is Field's value as text, when the value is at fault.
	Value string
	// Problem says what is wrong without naming a setting, e.g. "is
	// negative" or "select different load models; give one".
	Problem string
}

func (e *PlanError) Error() string {
	return ErrPlan.Error() + ": " + e.Message(func(field string) string { return field })
}

// Is makes every PlanError an ErrPlan.
func (e *PlanError) Is(target error) bool { return target == ErrPlan }

// Message says what is wrong with the settings named by name, e.g.
// "--vus -1 is negative" for a name that returns flags.
func (e *PlanError) Message(name func(field string) string) string {
	parts := []string{name(e.Field)}
	if e.Other != "" {
		parts = append(parts, "and", name(e.Other))
	}
	if e.Value != "" {
		parts = append(parts, e.Value)
	}
	return strings.Join(append(parts, e.Problem), " ")
}

// PlanMessage is the Message of err's PlanError with the settings named
// by names (a field it lacks keeps its name); ok is false when err is no
// PlanError.
func PlanMessage(err error, names map[string]string) (msg string, ok bool) {
	var pe *PlanError
	if !errors.As(err, &pe) {
		return "", false
	}
	return pe.Message(func(field string) string {
		if n, ok := names[field]; ok {
			return n
		}
		return field
	}), true
}

func planError(field, other, value, problem string) error {
	return &PlanError{Field: field, Other: other, Value: value, Problem: problem}
}

// Model names the load model a plan selects: "open", "recorded" or
// "closed".
func (p LoadPlan) Model() string {
	switch {
	case p.Rate.Count > 0:
		return "open"
	case p.Speed > 0:
		return "recorded"
	}
	return "closed"
}

// Validate reports a plan whose settings conflict or are out of range, with
// an error wrapping ErrPlan.
func (p LoadPlan) Validate() error {
	switch {
	case p.VUs < 0:
		return planError(FieldVUs, "", strconv.Itoa(p.VUs), "is negative")
	case p.Duration < 0:
		return planError(FieldDuration, "", p.Duration.String(), "is negative")
	case p.Explain < 0:
		return planError(FieldExplain, "", strconv.Itoa(p.Explain), "is negative")
	case p.Iterations < 0:
		return planError(FieldIterations, "", strconv.Itoa(p.Iterations), "is negative")
	case p.Speed < 0:
		return planError(FieldSpeed, "", strconv.FormatFloat(p.Speed, 'g', -1, 64), "is negative")
	case p.Rate.Count < 0 || (p.Rate.Count > 0 && p.Rate.Per <= 0):
		return planError(FieldRate, "", p.Rate.String(), "is not a positive rate")
	case p.Rate.Count > 0 && p.Speed > 0:
		return planError(FieldRate, FieldSpeed, "", "select different load models; give one")
	case (p.Rate.Count > 0 || p.Speed > 0) && (p.VUs > 0 || len(p.Stages) > 0):
		closed, other := FieldVUs, FieldRate
		if len(p.Stages) > 0 {
			closed = FieldStages
		}
		if p.Speed > 0 {
			other = FieldSpeed
		}
		return planError(closed, other, "", "select different load models (closed, open, as recorded); give one model")
	case len(p.Stages) > 0 && p.Duration > 0:
		return planError(FieldStages, FieldDuration, "", "conflict: the stages set the duration; drop the duration")
	case len(p.Stages) > 0 && p.Iterations > 0:
		return planError(FieldStages, FieldIterations, "", "conflict: the stages set the duration; drop the iterations")
	}
	for _, s := range p.Stages {
		if s.Duration <= 0 || s.Target < 0 {
			return planError(FieldStages, "", s.String(), "needs a positive duration and a target ≥ 0")
		}
	}
	return nil
}

// bounds returns the plan's duration and iteration bounds after defaults.
func (p LoadPlan) bounds() (time.Duration, int) {
	d, it := p.Duration, p.Iterations
	if len(p.Stages) > 0 {
		d = 0
		for _, s := range p.Stages {
			d += s.Duration
		}
	}
	if d == 0 && it == 0 {
		it = 1
	}
	return d, it
}

// Rate is an arrival rate: Count requests per Per.
type Rate struct {
	Count int
	Per   time.Duration
}

// ParseRate parses "200/s", "50/1s", "1000/m", "10/100ms" or a bare "200"
// (per second).
func ParseRate(s string) (Rate, error) {
	num, per, found := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n <= 0 {
		return Rate{}, fmt.Errorf("rate %q: want a positive number of requests, e.g. 200/s", s)
	}
	r := Rate{Count: n, Per: time.Second}
	if !found {
		return r, nil
	}
	per = strings.TrimSpace(per)
	switch per {
	case "s":
		r.Per = time.Second
	case "m":
		r.Per = time.Minute
	case "h":
		r.Per = time.Hour
	default:
		d, err := time.ParseDuration(per)
		if err != nil || d <= 0 {
			return Rate{}, fmt.Errorf("rate %q: want a unit s, m, h or a duration such as 1s after the slash", s)
		}
		r.Per = d
	}
	return r, nil
}

// Interval is the time between two intended starts.
func (r Rate) Interval() time.Duration {
	if r.Count <= 0 {
		return 0
	}
	return r.Per / time.Duration(r.Count)
}

// PerSecond is the rate in requests per second.
func (r Rate) PerSecond() float64 {
	if r.Per <= 0 {
		return 0
	}
	return float64(r.Count) / r.Per.Seconds()
}

// String formats r as ParseRate reads it.
func (r Rate) String() string {
	switch r.Per {
	case time.Second:
		return fmt.Sprintf("%d/s", r.Count)
	case time.Minute:
		return fmt.Sprintf("%d/m", r.Count)
	case time.Hour:
		return fmt.Sprintf("%d/h", r.Count)
	}
	return fmt.Sprintf("%d/%s", r.Count, r.Per)
}

// Stage is one step of a closed-model ramp: reach Target virtual users,
// linearly, over Duration.
type Stage struct {
	Duration time.Duration
	Target   int
}

// ParseStage parses "DURATION:TARGET", e.g. "30s:10".
func ParseStage(s string) (Stage, error) {
	ds, ts, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Stage{}, fmt.Errorf("stage %q: want DURATION:TARGET, e.g. 30s:10", s)
	}
	d, err := time.ParseDuration(strings.TrimSpace(ds))
	if err != nil || d <= 0 {
		return Stage{}, fmt.Errorf("stage %q: %q is not a positive duration", s, ds)
	}
	n, err := strconv.Atoi(strings.TrimSpace(ts))
	if err != nil || n < 0 {
		return Stage{}, fmt.Errorf("stage %q: %q is not a number of virtual users", s, ts)
	}
	return Stage{Duration: d, Target: n}, nil
}

// String formats s as ParseStage reads it.
func (s Stage) String() string { return fmt.Sprintf("%s:%d", s.Duration, s.Target) }

// vusAt returns the virtual users a ramp from start through stages wants at
// elapsed time t.
func vusAt(start int, stages []Stage, t time.Duration) int {
	from := start
	for _, s := range stages {
		if t < s.Duration {
			return from + int(float64(s.Target-from)*float64(t)/float64(s.Duration))
		}
		t -= s.Duration
		from = s.Target
	}
	return from
}

// maxVUs returns the most virtual users a plan ever wants.
func (p LoadPlan) maxVUs() int {
	m := p.VUs
	for _, s := range p.Stages {
		m = max(m, s.Target)
	}
	if m == 0 {
		m = 1
	}
	return m
}
