package replayer

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Fields of a ComparePlan that runs until it knows, as PlanError names them.
const (
	FieldMaxDuration = "max-duration"
	FieldCalibrate   = "calibrate"
	FieldConcurrent  = "concurrent"
)

// validateSequential checks the settings of a plan that runs until it knows
// or calibrates its load.
func (plan ComparePlan) validateSequential() error {
	switch {
	case plan.MaxDuration < 0:
		return planError(FieldMaxDuration, "", plan.MaxDuration.String(), "is negative")
	case plan.MaxDuration > 0 && plan.MaxDuration < plan.Load.Duration:
		return planError(FieldMaxDuration, "", plan.MaxDuration.String(), "is shorter than the load of the first look ("+plan.Load.Duration.String()+" per side)")
	case plan.MaxDuration > plan.Load.Duration && plan.Sequential:
		return planError(FieldMaxDuration, "", plan.MaxDuration.String(), "needs an interleaved comparison, not a sequential one")
	case plan.LookEvery < 0:
		return planError(FieldMaxDuration, "", fmt.Sprint(plan.LookEvery), "look interval is negative")
	case plan.Concurrent && plan.Sequential:
		return planError(FieldConcurrent, "", "", "conflicts with a sequential comparison: give one order")
	case plan.Calibrate < 0 || plan.Calibrate > 1:
		return planError(FieldCalibrate, "", fmt.Sprint(plan.Calibrate), "is not a fraction between 0 and 1")
	case plan.Calibrate > 0 && plan.Sequential:
		return planError(FieldCalibrate, "", fmt.Sprint(plan.Calibrate), "needs an interleaved comparison: separate runs at a fixed rate drift apart")
	case plan.Calibrate > 0 && plan.Load.Model() != "closed":
		return planError(FieldCalibrate, FieldRate, "", "conflict: a calibrated load finds its own rate from the closed model's VUs")
	}
	return nil
}

// warmups warms up both sides, the baseline first. With Calibrate, both
// warmups run the closed model and measure each side's throughput; the
// plan's load then becomes the open model at Calibrate times the smaller of
// the two (st.Rate), so that neither build is driven near its capacity.
func (plan *ComparePlan) warmups(ctx context.Context, sides [2]Side, st *CompareStats) error {
	if plan.Calibrate <= 0 || st.Rate.Count > 0 {
		for _, s := range sides {
			if err := plan.warmup(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range sides {
		if err := plan.calibrate(ctx, s, st); err != nil {
			return err
		}
	}
	share := plan.Calibrate
	if plan.Concurrent {
		share /= 2 // both builds at once on one machine
	}
	st.Rate = calibratedRate(st.Throughput * share)
	plan.Load.Rate, plan.Load.VUs = st.Rate, 0
	return nil
}

// MinCalibration is the shortest warmup of a calibrated (fair) load: its
// first half warms the build up (a JIT, caches, pools), its second half
// measures the throughput.
const MinCalibration = 2 * time.Second

// calibrate warms up one side under the closed model and lowers
// st.Throughput to its throughput (requests that succeeded per second) over
// the second half of the warmup.
func (plan *ComparePlan) calibrate(ctx context.Context, s Side, st *CompareStats) error {
	w := max(plan.Warmup, MinCalibration)
	if _, err := plan.warmupFor(ctx, s, w/2); err != nil {
		return err
	}
	ws, err := plan.warmupFor(ctx, s, w-w/2)
	if err != nil {
		return err
	}
	secs := ws.Ended.Sub(ws.Started).Seconds()
	ok := ws.Requests - ws.Failures
	if ok <= 0 || secs <= 0 {
		return fmt.Errorf("compare: %s warmup: no request succeeded in %s under %d VUs, so no fair rate can be found from it; give --rate or --vus", s.Name, w, plan.Load.VUs)
	}
	if t := float64(ok) / secs; st.Throughput == 0 || t < st.Throughput {
		st.Throughput = t
	}
	return nil
}

// calibratedRate is perSecond as a Rate: whole requests per second from 10/s
// up, else one request per interval.
func calibratedRate(perSecond float64) Rate {
	if perSecond >= 10 {
		return Rate{Count: int(math.Round(perSecond)), Per: time.Second}
	}
	return Rate{Count: 1, Per: time.Duration(float64(time.Second) / max(perSecond, 0.01))}
}

// runUntilKnown takes the looks of a plan with MaxDuration: it asks Look
// about the first slices, then runs more slice pairs (through pairs: as many
// again, or LookEvery) and looks again, until Look says stop or MaxDuration
// is reached.
func (plan *ComparePlan) runUntilKnown(ctx context.Context, st *CompareStats, d time.Duration, pairs func(from, to int) error) error {
	if plan.MaxDuration <= plan.Load.Duration || plan.Look == nil {
		return nil
	}
	maxSlices := int(plan.MaxDuration / d)
	for {
		last := st.Slices >= maxSlices
		st.Looks++
		stop, err := plan.Look(ctx, Look{N: st.Looks, Slices: st.Slices, Ran: time.Duration(st.Slices) * d, MaxDuration: plan.MaxDuration, Last: last})
		if err != nil || stop || last {
			return err
		}
		to := min(st.Slices+max(plan.LookEvery, 0), maxSlices)
		if plan.LookEvery == 0 {
			to = min(2*st.Slices, maxSlices)
		}
		if err := pairs(st.Slices+1, to); err != nil {
			return err
		}
		st.Slices = to
	}
}
