package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/replaykit/replay/analyzer"
)

// CheckTotalsDocument totals a run's comparison of answers with the
// recording (--check-responses).
type CheckTotalsDocument struct {
	Passed    bool  `json:"passed"`
	Compared  int64 `json:"compared"`
	Differing int64 `json:"differing"`
}

func checkTotalsDoc(rc *analyzer.ResponseCheck) *CheckTotalsDocument {
	if rc == nil {
		return nil
	}
	return &CheckTotalsDocument{Passed: rc.Passed(), Compared: rc.Compared, Differing: rc.Differing}
}

// checkedDoc is the document of endpoint's answers in rc; nil when rc
// did not compare any.
func checkedDoc(rc *analyzer.ResponseCheck, endpoint string) *ResponsesDocument {
	if rc == nil {
		return nil
	}
	for _, e := range rc.Endpoints {
		if e.Endpoint == endpoint {
			return responsesDoc(e.Responses)
		}
	}
	return nil
}

// checkedResponses lists the endpoints rc compared, for the renderers.
func checkedResponses(rc *analyzer.ResponseCheck) []endpointResponses {
	if rc == nil {
		return nil
	}
	var out []endpointResponses
	for _, e := range rc.Endpoints {
		out = append(out, endpointResponses{e.Endpoint, e.Responses})
	}
	return out
}

// responsesWhy says why a run failed its check of answers: "12 of 40
// answers differ from the recording (GET /orders: `$.id`: number 7 →
// string "7" in 12 of 20 responses)"; "" when it passed or did not check.
func responsesWhy(rc *analyzer.ResponseCheck) string {
	if rc == nil || rc.Passed() {
		return ""
	}
	s := fmt.Sprintf("%s of %s answers differ from the recording", count(rc.Differing), count(rc.Compared))
	if e := rc.Endpoints[0]; e.Responses.Sentence() != "" {
		s += " (" + e.Endpoint + ": " + e.Responses.Differences[0].Sentence() + ")"
	}
	return s
}

// joinWhy joins the reasons a run failed that are not "".
func joinWhy(whys ...string) string {
	var out []string
	for _, w := range whys {
		if w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, "; ")
}

// checkNext says what to do about answers that differ from the
// recording.
func checkNext(rc *analyzer.ResponseCheck, q quoter) string {
	var paths []string
	for _, e := range rc.Endpoints {
		for _, g := range e.Responses.Differences {
			if p := q(g.Path); !strings.Contains(strings.Join(paths, " "), p) {
				paths = append(paths, p)
			}
		}
	}
	return fmt.Sprintf("Check the answers that differ from the recording (%s): fix the build if they are bugs; accept an intended change with --accept-diff PATH, ignore noise with --ignore PATH.",
		strings.Join(paths[:min(len(paths), 5)], ", "))
}

// responsesSuite is a JUnit suite of a run's check of answers: a case per
// endpoint, failed when an answer differs from the recording.
func responsesSuite(rc *analyzer.ResponseCheck, start time.Time) junitSuite {
	s := newSuite("replay.responses", start)
	if rc == nil {
		return s
	}
	for _, e := range rc.Endpoints {
		c := junitCase{Name: e.Endpoint, Classname: s.Name, Time: junitTime(0),
			SystemOut: fmt.Sprintf("%d answers compared with the recording, %d differing", e.Responses.Compared, e.Responses.Differing)}
		if e.Responses.Differing > 0 {
			msg := e.Responses.Sentence()
			text := msg
			if ex := firstExample(e.Responses); ex != nil {
				text += fmt.Sprintf("\n\nexample: exchange %d (- recording, + build)\n%s", ex.ExchangeID, ex.Diff)
			}
			c.Failure = &junitMessage{Message: msg, Type: "behaviour", Text: text}
		}
		s.add(c)
	}
	return s
}
