package session

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
)

// settings are the shared settings plus the side's own: its name, its
// build command and environment, its headers; secrets masked.
func (s *Side) settings() map[string]string {
	out := maps.Clone(s.cfg.Settings)
	if out == nil {
		out = map[string]string{}
	}
	if s.paired {
		out["side"] = s.sc.Name
	}
	if s.sc.Cmd != "" {
		// The side's own environment names the build in reports, e.g.
		// "APP_SLOW=1 ./orders": the command alone is often the same.
		out[report.SettingCmd] = strings.TrimSpace(strings.Join(redact.Env(s.sc.Env), " ") + " " + s.sc.Cmd)
		if env := redact.Env(append(slices.Clone(s.cfg.Env), s.sc.Env...)); len(env) > 0 {
			out["env"] = strings.Join(env, " ")
		}
	}
	if h := redact.Headers(s.sc.Header); h != "" {
		out["headers"] = h
	}
	return out
}

// stallSettings records in a run file's settings how far its target fell
// behind the open model.
func stallSettings(s map[string]string, st replayer.Stats) {
	if st.Late > 0 {
		s["late_requests"] = strconv.FormatInt(st.Late, 10)
		s["max_late"] = st.MaxLate.Round(time.Millisecond).String()
	}
	if st.NotSent > 0 {
		s["not_sent"] = strconv.FormatInt(st.NotSent, 10)
	}
}
