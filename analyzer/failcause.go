package analyzer

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// DefaultMaxFailed is the fraction of load requests that may fail before a
// run fails even without goals: 1%.
const DefaultMaxFailed = 0.01

// The kinds of FailureCause, each a phrase a report can print as is; a
// gRPC call that ended with another status than recorded is of the kind
// "gRPC " and the status's name ("gRPC UNAVAILABLE").
const (
	FailBuildExited = "the build exited"     // refused or cut connections after the build's command ended
	FailRefused     = "connection refused"   // nothing listened on the target
	FailClosed      = "connection closed"    // the target closed or reset the connection before answering
	FailTimeout     = "timeouts"             // no complete response within the timeout
	FailNotSent     = "not sent"             // the target stalled the open model's sender
	FailServerError = "5xx answers"          // the target answered with a server error
	FailStatus      = "unexpected status"    // another status class than recorded
	FailOther       = "other errors"         // any other transport error
	FailMockMiss    = "mock misses"          // upstream calls the snapshot has no answer for
	FailUpstream    = "upstream unreachable" // calls the mock passed through that the real upstream did not answer
	FailDatabase    = "database errors"      // statements the database rejected
	FailSQLUpstream = "database unreachable" // connections the SQL counter could not open to the database
)

// BuildExit is how a build replay started ended during the run.
type BuildExit struct {
	// How says how it ended, e.g. "exited with status 2".
	How string
	// LastLines are the last non-empty lines of its output, oldest first
	// (at most 5).
	LastLines []string
	// Log is the path of its log file; empty when unknown.
	Log string
}

// FailureCause is one reason a run's requests failed, with its count.
type FailureCause struct {
	// Kind is one of the Fail constants.
	Kind string
	// Count is the number of failed load requests of this kind; for
	// FailMockMiss the upstream calls the mock could not answer, for
	// FailUpstream the calls passed through that got no answer, for
	// FailDatabase the statements the database rejected, for
	// FailSQLUpstream the connections that could not be opened.
	Count int64
	// Detail says more: the statuses of 5xx answers ("503 ×40, 500 ×2"),
	// how the build ended, the first error text of other errors.
	Detail string
	// LastLines are the build's last lines of output (FailBuildExited only).
	LastLines []string
}

// String describes the cause on one line, e.g. "5xx answers ×42 (503 ×40, 500 ×2)"
// or "mock misses: 12 upstream calls the snapshot has no answer for".
func (c FailureCause) String() string {
	var s string
	switch c.Kind {
	case FailMockMiss:
		s = fmt.Sprintf("%s: %s upstream calls the snapshot has no answer for", c.Kind, FormatCount(float64(c.Count)))
	case FailUpstream:
		s = fmt.Sprintf("%s: %s upstream calls the mock passed through got no answer from the real upstream", c.Kind, FormatCount(float64(c.Count)))
	case FailDatabase:
		s = fmt.Sprintf("%s: the database rejected %s statements", c.Kind, FormatCount(float64(c.Count)))
	case FailSQLUpstream:
		s = fmt.Sprintf("%s: the SQL counter could not connect to the database %s times", c.Kind, FormatCount(float64(c.Count)))
	default:
		s = fmt.Sprintf("%s ×%d", c.Kind, c.Count)
		if c.Count == 0 { // a build that exited with no request failing for it
			s = c.Kind
		}
	}
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// FailureCheck is the check of a run's failed requests against the
// largest share allowed, with the causes found.
type FailureCheck struct {
	// MaxFailed is the largest fraction of load requests that may fail
	// (0.01: 1%); zero allows none.
	MaxFailed float64
	// Rate is the fraction of load requests that failed.
	Rate float64
	// Failed reports that Rate is above MaxFailed.
	Failed bool
	// Causes are the main reasons, most requests first; then the mock's
	// misses and the database's errors when there were any.
	Causes []FailureCause
}

// Why says why a failed check failed, e.g. "95% of requests failed (at
// most 1% may)"; "" when it passed.
func (f *FailureCheck) Why() string {
	if f == nil || !f.Failed {
		return ""
	}
	return fmt.Sprintf("%s of requests failed (at most %s may)", FormatPercent(100*f.Rate), FormatPercent(100*f.MaxFailed))
}

// CheckFailures checks s's failed load requests against maxFailed (a
// fraction; negative counts as zero) and names their causes; exit, when
// the build replay started ended during the run, turns refused and cut
// connections into FailBuildExited.
func CheckFailures(s *Summary, maxFailed float64, exit *BuildExit) *FailureCheck {
	maxFailed = max(maxFailed, 0)
	f := &FailureCheck{MaxFailed: maxFailed, Causes: FailureCauses(s, exit)}
	if o := s.Overall; o != nil && o.Requests > 0 {
		f.Rate = float64(o.Failed) / float64(o.Requests)
	}
	f.Failed = f.Rate > maxFailed
	return f
}

// ClassifyFailure returns the kind of a failed result from its status and
// error text (snapshots.Result.Status and Error); buildExited says the
// build's command had ended during the run.
func ClassifyFailure(status int, errText string, buildExited bool) string {
	e := strings.ToLower(errText)
	switch {
	case errText == "":
		if status >= 500 {
			return FailServerError
		}
		return FailStatus
	case strings.Contains(e, "connection refused"):
		if buildExited {
			return FailBuildExited
		}
		return FailRefused
	case strings.Contains(e, "eof") || strings.Contains(e, "connection reset") || strings.Contains(e, "broken pipe") ||
		strings.Contains(e, "server closed"):
		if buildExited {
			return FailBuildExited
		}
		return FailClosed
	case strings.HasPrefix(e, "timeout") || strings.Contains(e, "deadline exceeded") || strings.Contains(e, "i/o timeout"):
		return FailTimeout
	case strings.HasPrefix(e, "not sent"):
		return FailNotSent
	}
	return FailOther
}

// FailureCauses names why s's load requests failed, the commonest first,
// from the overall failure summary (Overall.Failures), then the mock's
// misses and the database's rejected statements (s.Info) when there were
// any.
func FailureCauses(s *Summary, exit *BuildExit) []FailureCause {
	var out []FailureCause
	at := map[string]int{} // kind → index in out
	statuses := map[string]map[int]int64{}
	cause := func(kind, detail string) *FailureCause {
		i, ok := at[kind]
		if !ok {
			i = len(out)
			at[kind] = i
			out = append(out, FailureCause{Kind: kind, Detail: detail})
		}
		return &out[i]
	}
	if o := s.Overall; o != nil {
		var listed int64
		for _, f := range o.Failures {
			kind := ClassifyFailure(f.Status, f.Error, exit != nil)
			switch {
			case f.Error == "other failures":
				kind = FailOther
			case f.Error == "" && f.GRPC != "":
				kind = "gRPC " + f.GRPC // a status other than recorded, by name
			}
			detail := ""
			if kind == FailOther || kind == FailRefused || kind == FailClosed {
				detail = f.Error
			}
			cause(kind, detail).Count += f.Count
			listed += f.Count
			if f.Error == "" && f.GRPC == "" {
				if statuses[kind] == nil {
					statuses[kind] = map[int]int64{}
				}
				statuses[kind][f.Status] += f.Count
			}
		}
		// Overall.Failures lists the commonest kinds only.
		if rest := o.Failed - listed; rest > 0 {
			cause(FailOther, "").Count += rest
		}
	}
	for kind, st := range statuses {
		cause(kind, "").Detail = statusDetail(st)
	}
	if exit != nil {
		c := cause(FailBuildExited, "")
		c.Detail, c.LastLines = exit.How, exit.LastLines
	}
	slices.SortStableFunc(out, func(x, y FailureCause) int { return cmp.Compare(y.Count, x.Count) })
	return append(out, evidenceCauses(s.Info)...)
}

// evidenceCauses are the causes the run's mock and SQL counter saw. Misses
// a mock passed through are none: the real upstream answered them, or
// failed to (FailUpstream).
func evidenceCauses(info snapshots.RunInfo) []FailureCause {
	var out []FailureCause
	if info.MockMisses > 0 && !MissesPassedThrough(info) {
		out = append(out, FailureCause{Kind: FailMockMiss, Count: info.MockMisses})
	}
	if w := info.Wiring; w != nil && w.MockPassthroughErrors > 0 {
		out = append(out, FailureCause{Kind: FailUpstream, Count: w.MockPassthroughErrors})
	}
	if info.StatementErrors > 0 {
		out = append(out, FailureCause{Kind: FailDatabase, Count: info.StatementErrors})
	}
	if w := info.Wiring; w != nil && w.SQLUpstreamErrors > 0 {
		out = append(out, FailureCause{Kind: FailSQLUpstream, Count: w.SQLUpstreamErrors})
	}
	return out
}

// MissesPassedThrough reports that the run's mock passed its misses
// through to the real upstreams (--on-miss passthrough, recorded in the
// run's settings as on_miss) instead of answering them with errors.
func MissesPassedThrough(info snapshots.RunInfo) bool {
	return info.Settings["on_miss"] == "passthrough"
}

// statusDetail lists statuses with counts, the commonest first: "503
// Service Unavailable ×40, 500 Internal Server Error ×2".
func statusDetail(st map[int]int64) string {
	codes := byCount(st)
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		name := strconv.Itoa(c)
		if t := http.StatusText(c); t != "" {
			name += " " + t
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", name, st[c]))
	}
	return strings.Join(parts, ", ")
}

// ParseMaxFailed parses a share of failed requests: "1%", "0.5%", a
// fraction such as "0.01", or "0"; it returns the fraction.
func ParseMaxFailed(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("share of failed requests %q: want N%% or a fraction, e.g. 1%% or 0.01", s)
	}
	if pct {
		v /= 100
	}
	if v < 0 || v > 1 {
		return 0, fmt.Errorf("share of failed requests %q: want 0%% to 100%%", s)
	}
	return v, nil
}
