package replayer

import "github.com/replaykit/replay/snapshots"

// State returns what the stage did so far: tokens retried, values carried
// from answers to later requests, credentials refused; nil when there is
// nothing to say.
func (r *Replayer) State() *snapshots.State {
	st := &snapshots.State{RedactedRefused: r.redactedRefused.Load()}
	if s := r.stage; s != nil {
		st.TokenRetries = s.tokenRetries.Load()
		st.TokenErrors, st.TokenError = s.tokenErrors.Load(), s.tokenErr.get()
		st.Waited = s.waited.Load()
		if s.shift != nil {
			st.Shifted = s.shift.shifted.Load()
		}
		if s.links != nil {
			for _, l := range s.links.links {
				n := l.requests.Load()
				if n == 0 {
					continue
				}
				st.Links = append(st.Links, snapshots.Link{From: l.from, To: l.to, Requests: n,
					Resolved: l.resolved.Load(), NotFound: l.notFound.Load(), Why: l.why.get()})
			}
		}
	}
	if st.Empty() {
		return nil
	}
	return st
}
