//go:build !linux

package replayer

import "context"

// runClosedLoop is the closed model on event loops, on Linux only: here
// the goroutine path runs every plan.
func (r *Replayer) runClosedLoop(context.Context, LoadPlan, ResultSink) (Stats, bool) {
	return Stats{}, false
}

// runOpenLoop is the open and as-recorded models on an event loop, on Linux
// only: here the goroutine path runs every plan.
func (r *Replayer) runOpenLoop(context.Context, LoadPlan, ResultSink) (Stats, bool) {
	return Stats{}, false
}
