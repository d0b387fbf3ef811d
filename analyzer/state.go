package analyzer

import (
	"fmt"

	"github.com/replaykit/replay/snapshots"
)

// RedactedAdvice is what to do when the target refuses requests whose
// recorded credential was redacted.
const RedactedAdvice = "the recording's Authorization was redacted; give --token-cmd or --oauth2-token-url/--oauth2-client-id (the secret in $OAUTH2_CLIENT_SECRET)"

// StateNotes are a run's sentences about what the replay's stage did
// (RunInfo.State): requests refused for a redacted credential or sent
// without a token (in a comparison, side given, these are AuthFaults
// instead), 401s retried with a fresh token, the links between requests
// used and how often each resolved, the ones that did not and why. side,
// when not empty, prefixes every sentence ("baseline: "). None when the
// stage did nothing.
func StateNotes(info snapshots.RunInfo, side string) []string {
	st := info.State
	if st.Empty() {
		return nil
	}
	who := ""
	if side != "" {
		who = side + ": "
	}
	var notes []string
	if side == "" {
		notes = authSentences(st, "")
	}
	if n := st.TokenRetries; n > 0 {
		notes = append(notes, fmt.Sprintf("%s%s answered 401 got a fresh token and %s sent again once (counted once, with the second answer).",
			who, plural(n, "request"), pick(n, "was", "were")))
	}
	for _, l := range st.Links {
		s := fmt.Sprintf("%sLink: %s → %s: %d of %d", who, l.From, l.To, l.Resolved, l.Requests)
		if miss := l.Requests - l.Resolved; miss > 0 {
			s += fmt.Sprintf("; %d unresolved (%s), sent with the recorded value", miss, l.Why)
			if l.NotFound > 0 {
				s += fmt.Sprintf(", %d of them answered 404: the id came from %s", l.NotFound, l.From)
			}
		}
		notes = append(notes, s+".")
	}
	if n := st.Waited; n > 0 {
		notes = append(notes, fmt.Sprintf("%s%s waited for the answer a value of theirs comes from (late in the open model).", who, plural(n, "request")))
	}
	if n := st.Shifted; n > 0 {
		notes = append(notes, fmt.Sprintf("%s%s moved by the replay's offset from the recording (--shift-times).", who, plural(n, "timestamp")))
	}
	return notes
}

// authSentences say why requests failed for want of a credential: refused
// with one redacted at recording, or sent without a token.
func authSentences(st *snapshots.State, who string) []string {
	var out []string
	if n := st.RedactedRefused; n > 0 {
		out = append(out, fmt.Sprintf("%s%s with a credential redacted at recording %s answered 401 or 403: %s.",
			who, plural(n, "request"), pick(n, "was", "were"), RedactedAdvice))
	}
	if n := st.TokenErrors; n > 0 {
		out = append(out, fmt.Sprintf("%s%s went out without a token: %s.", who, plural(n, "request"), st.TokenError))
	}
	return out
}

// AuthFaults are the sides of a comparison refused for want of a
// credential or sent without a token: the verdict would rest on one
// build's auth failures, so it is inconclusive.
func AuthFaults(base, cand snapshots.RunInfo) []Fault {
	var out []Fault
	for _, s := range []snapshots.RunInfo{base, cand} {
		if s.State.Empty() {
			continue
		}
		for _, text := range authSentences(s.State, "the "+s.Name+": ") {
			out = append(out, Fault{Side: s.Name, Kind: FaultAuth, Text: text})
		}
	}
	return out
}
