package mock

import (
	"fmt"
	"io"
	"strings"
)

// WriteSummary writes what s answered and every miss it kept, with the
// closest recorded request and the differences, as `replay mock` prints
// them when it stops.
func (s *Server) WriteSummary(w io.Writer) {
	st := s.Stats()
	answered := st.Exact + st.Loose + st.Template
	failed := ""
	if st.PassthroughErrors > 0 {
		failed = fmt.Sprintf(" (%d of them unanswered: the upstream could not be reached)", st.PassthroughErrors)
	}
	fmt.Fprintf(w, "mock stopped: %s answered (%d exact, %d loose, %d by template), %s, %d passed through%s\n",
		plural(answered, "call"), st.Exact, st.Loose, st.Template, plural(st.Misses, "miss"), st.Passthrough, failed)
	if st.Truncated > 0 {
		fmt.Fprintln(w, TruncatedSentence(st.Truncated, s.cfg.AllowTruncated))
	}
	log := s.MissLog()
	if len(log) == 0 {
		return
	}
	fmt.Fprintln(w, "misses:")
	var kept int64
	for _, me := range log {
		kept += me.Count
		fmt.Fprintf(w, "  %s", me.Request)
		if me.Count > 1 {
			fmt.Fprintf(w, " (%d times)", me.Count)
		}
		fmt.Fprintln(w)
		if me.Closest == "" {
			fmt.Fprintln(w, "    nothing recorded for this service")
			continue
		}
		fmt.Fprintf(w, "    closest recorded: %s\n", me.Closest)
		for _, d := range me.Differences {
			fmt.Fprintf(w, "    %s\n", d)
		}
	}
	if rest := st.Misses - kept; rest > 0 {
		fmt.Fprintf(w, "  … and %s more of requests not listed (the first %d distinct ones are)\n", plural(rest, "miss"), MissLogLimit)
	}
}

// TruncatedSentence says what became of n calls matched to a recorded
// response whose body was cut at recording: served cut (allowed, with
// --allow-truncated) or refused.
func TruncatedSentence(n int64, allowed bool) string {
	if allowed {
		verb := "were"
		if n == 1 {
			verb = "was"
		}
		return fmt.Sprintf("%s %s served a recorded response body cut at recording (--allow-truncated)", plural(n, "call"), verb)
	}
	return fmt.Sprintf("%s refused (502): their recorded response body was cut at recording; record again with a larger --body-limit, or pass --allow-truncated", plural(n, "call"))
}

// plural is "1 call", "2 calls", "1 miss", "2 misses".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	if strings.HasSuffix(thing, "s") {
		return fmt.Sprintf("%d %ses", n, thing)
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
