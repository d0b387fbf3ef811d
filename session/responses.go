package session

import (
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// ResponseCapture says how each side keeps its build's answers in its run
// file, for the comparison of behaviour (see replayer.Config.Responses).
// The zero value keeps them with the replayer's defaults.
type ResponseCapture struct {
	// Off keeps no answers: the run file holds no responses to compare.
	Off bool
	// SampleExchanges is the number of recorded exchanges sampled per
	// endpoint; zero means replayer.DefaultSampleExchanges.
	SampleExchanges int
	// SampleBody is the most decoded body bytes a sample keeps; zero means
	// replayer.DefaultSampleBody.
	SampleBody int
	// Headers are kept on top of replayer.DefaultResponseHeaders (headers
	// a comparison is told to look at).
	Headers []string
}

// apply sets the capture of rc on cfg, the answers going to the run file
// rw will hold.
func (rc ResponseCapture) apply(cfg *replayer.Config, rw *runResponses) {
	if rc.Off {
		return
	}
	cfg.Responses, cfg.SampleExchanges, cfg.SampleBody, cfg.ResponseHeaders = rw, rc.SampleExchanges, rc.SampleBody, rc.Headers
}

// runResponses hands samples to a side's run file, created after its
// replayer (and before any request is sent).
type runResponses struct{ w *snapshots.RunWriter }

func (r *runResponses) AddResponse(s *snapshots.ResponseSample) { r.w.AddResponse(s) }

// writeHashes adds the answers the side's replayer counted by hash to its
// run file.
func (s *Side) writeHashes() {
	if s.rp != nil && s.run != nil {
		s.run.AddResponseHashes(s.rp.ResponseHashes())
	}
}
