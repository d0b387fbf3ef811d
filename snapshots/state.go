package snapshots

// State is what a replay's stage between the plan and the wire did: the
// tokens it placed and the values it carried from one answer to a later
// request (RunInfo.State).
type State struct {
	// TokenRetries counts requests answered 401 that were sent again once
	// with a fresh token; the result is the second answer's.
	TokenRetries int64 `json:"token_retries,omitempty"`
	// TokenErrors counts requests sent without a token because none could
	// be had; TokenError is the last reason (never holding a secret).
	TokenErrors int64  `json:"token_errors,omitempty"`
	TokenError  string `json:"token_error,omitempty"`
	// RedactedRefused counts requests whose recorded credential was
	// redacted, replayed without a token source, that the target answered
	// 401 or 403.
	RedactedRefused int64 `json:"redacted_refused,omitempty"`
	// Waited counts requests that waited for the answer a value of theirs
	// comes from (in the open model, sent late).
	Waited int64 `json:"waited,omitempty"`
	// Shifted counts timestamps moved by the replay's offset.
	Shifted int64 `json:"shifted,omitempty"`
	// Links are the links between requests found in the recording, with
	// how often each was used and resolved.
	Links []Link `json:"links,omitempty"`
}

// Link is one link between requests: a value the server generated in an
// answer (From: "$.id of POST /transactions/random") that a later request
// sends back (To: "path of GET /transactions/{id}").
type Link struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Requests counts the requests sent that take the value; Resolved
	// those that got the live value.
	Requests int64 `json:"requests"`
	Resolved int64 `json:"resolved"`
	// NotFound counts the unresolved requests answered 404; Why says why
	// the last unresolved one was.
	NotFound int64  `json:"not_found,omitempty"`
	Why      string `json:"why,omitempty"`
}

// Empty reports whether s has nothing to say.
func (s *State) Empty() bool {
	return s == nil || (s.TokenRetries == 0 && s.TokenErrors == 0 && s.RedactedRefused == 0 && s.Waited == 0 &&
		s.Shifted == 0 && len(s.Links) == 0)
}

// Add sums o into s (the sides of a sliced run, shards); links are matched
// by From and To.
func (s *State) Add(o *State) {
	if o == nil {
		return
	}
	s.TokenRetries += o.TokenRetries
	s.TokenErrors += o.TokenErrors
	if o.TokenError != "" {
		s.TokenError = o.TokenError
	}
	s.RedactedRefused += o.RedactedRefused
	s.Waited += o.Waited
	s.Shifted += o.Shifted
	for _, l := range o.Links {
		found := false
		for i := range s.Links {
			if s.Links[i].From == l.From && s.Links[i].To == l.To {
				s.Links[i].Requests += l.Requests
				s.Links[i].Resolved += l.Resolved
				s.Links[i].NotFound += l.NotFound
				if l.Why != "" {
					s.Links[i].Why = l.Why
				}
				found = true
			}
		}
		if !found {
			s.Links = append(s.Links, l)
		}
	}
}
