package respdiff

import (
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Endpoint compares the candidate's answers to one endpoint's requests
// with the baseline's. What differs between the baseline's two answers to
// the same request, and between the recording's answer (recorded may be
// nil) and the baseline's when both have the same status and the recording
// kept the whole body, is noise: it is ignored and listed (a list in another order makes that list unordered).
//
// Answers beyond the sample (Side.Hashes) are compared by hash, per
// exchange: they count as compared when the baseline has hashes of that
// exchange. They count as differing by status when the baseline answered
// that exchange with one status only and another came; by body only when,
// besides, the baseline's bodies for it all had one hash and the endpoint's
// bodies needed nothing ignored (no noise learned, no --ignore of a body
// path, no unordered list, no answer naming its own host): a hash cannot
// tell an ignored field from another.
func (c *Comparer) Endpoint(base, cand, recorded *Side) *Summary {
	var learn []learnPair
	for _, id := range sortedIDs(base.Samples) {
		as := base.Samples[id]
		for i := 1; i < len(as); i++ {
			learn = append(learn, learnPair{as[i-1], as[i], base.Host, base.Host, ReasonBaseline, nil})
		}
	}
	if recorded != nil {
		for _, id := range sortedIDs(base.Samples) {
			r, as := recorded.Samples[id], base.Samples[id]
			// A recorded body cut short or not kept (--body-limit) says
			// nothing of what varies in the body: learning from it would
			// hide every body difference.
			if len(r) > 0 && r[0].Status == as[0].Status && !r[0].Truncated && !(len(r[0].Body) == 0 && len(as[0].Body) > 0) {
				learn = append(learn, learnPair{r[0], as[0], recorded.Host, base.Host, ReasonRecording, nil})
			}
		}
	}
	return c.run(base, cand, append(learn, c.candidateNoise(base, cand)...), false)
}

// candidateNoise is what varies between the candidate's answers to the
// same request where one of them agrees with the baseline there: a value
// that follows state the builds share (a sequence both draw from, reset
// between phases) rather than the build, such as the id a POST makes up
// when the baseline answered it twice at the same point of the sequence
// and the candidate did not. A change the candidate made keeps every one
// of its answers apart from the baseline's, and stays a difference.
func (c *Comparer) candidateNoise(base, cand *Side) []learnPair {
	var learn []learnPair
	user := &noise{user: c.unordered}
	for _, id := range sortedIDs(cand.Samples) {
		as, bs := cand.Samples[id], base.Samples[id]
		if len(as) < 2 || len(bs) == 0 {
			continue
		}
		// The general paths at which each candidate answer differs from
		// the baseline's first.
		apart := make([]map[string]bool, len(as))
		for k, a := range as {
			env := &pairEnv{headers: c.headers, unordered: user.unordered, hostA: hostOf(base.Host), hostB: hostOf(cand.Host)}
			apart[k] = map[string]bool{}
			for _, d := range diffAnswers(bs[0], a, env) {
				apart[k][d.General()] = true
			}
		}
		agrees := func(d Diff) bool {
			return slices.ContainsFunc(apart, func(m map[string]bool) bool { return !m[d.General()] })
		}
		for i := 1; i < len(as); i++ {
			learn = append(learn, learnPair{as[i-1], as[i], cand.Host, cand.Host, ReasonCandidate, agrees})
		}
	}
	return learn
}

// Check compares a build's answers with the recorded ones (RecordedSide),
// the recording taking the baseline's place: what differs between the
// build's two answers to the same request is noise, and values the
// recording holds redacted are ignored. Hashes are compared as in Endpoint.
func (c *Comparer) Check(build, recorded *Side) *Summary {
	var learn []learnPair
	for _, id := range sortedIDs(build.Samples) {
		as := build.Samples[id]
		for i := 1; i < len(as); i++ {
			learn = append(learn, learnPair{as[i-1], as[i], build.Host, build.Host, ReasonBuild, nil})
		}
	}
	return c.run(recorded, build, learn, true)
}

// run compares other's answers with ref's, after learning noise.
func (c *Comparer) run(ref, other *Side, learn []learnPair, recording bool) *Summary {
	n := c.learnNoise(learn)
	env := &pairEnv{headers: c.headers, hostA: hostOf(ref.Host), hostB: hostOf(other.Host), unordered: n.unordered,
		hide: func(segs []seg) bool {
			d := Diff{segs: segs}
			_, rule := firstMatch(c.ignore, d)
			_, learned := firstMatch(n.paths, d)
			return rule || learned
		}}
	t := newTally(c, n, ref, recording)
	for _, id := range sortedIDs(other.Samples) {
		refs := ref.Samples[id]
		if len(refs) == 0 {
			continue
		}
		for k, a := range other.Samples[id] {
			r := refs[min(k, len(refs)-1)]
			t.pair(id, r, a, env)
		}
	}
	// An accepted change changes the bytes of the answers beyond the
	// sample too: their hashes then tell nothing more.
	trust := n.empty() && len(t.accepted) == 0 && !c.ignoresBody() && !hostInBodies(ref, env.hostA) && !hostInBodies(other, env.hostB)
	t.hashes(ref.Hashes, other.Hashes, trust)
	if n := max(ref.HashedOneIn, other.HashedOneIn); n > 1 {
		t.s.HashedOneIn = n
	}
	return t.summary()
}

// hostOf is the host:port of a URL, or s itself.
func hostOf(s string) string {
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil {
			return u.Host
		}
	}
	return s
}

func sortedIDs(m map[int64][]Answer) []int64 { return slices.Sorted(maps.Keys(m)) }
