package session

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaykit/replay/analyzer"

	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
)

// settings are the shared settings plus the side's own: its name, its
// build command and environment, its headers; secrets masked.
func (s *Side) settings(shared map[string]string) map[string]string {
	out := maps.Clone(shared)
	if s.paired {
		out["side"] = s.sc.Name
	}
	if s.sc.Cmd != "" {
		// The side's own environment names the build in reports, e.g.
		// "APP_SLOW=1 ./orders": the command alone is often the same.
		cmd := s.sc.Cmd
		if s.sc.CmdShown != "" {
			cmd = s.sc.CmdShown
		}
		out[report.SettingCmd] = strings.TrimSpace(strings.Join(redact.Env(s.sc.Env), " ") + " " + redact.Command(cmd))
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
// behind the open model, and how many requests waited for the answer they
// depend on.
func stallSettings(s map[string]string, st replayer.Stats) {
	if st.Late > 0 {
		s["late_requests"] = strconv.FormatInt(st.Late, 10)
		s["max_late"] = st.MaxLate.Round(time.Millisecond).String()
	}
	if st.NotSent > 0 {
		s["not_sent"] = strconv.FormatInt(st.NotSent, 10)
	}
	if st.WaitedForSource > 0 {
		s["waited_for_source"] = strconv.FormatInt(st.WaitedForSource, 10)
		s["max_wait_for_source"] = st.MaxWaitForSource.Round(time.Millisecond).String()
	}
}

// put sets k to v in s unless v is empty.
func put(s map[string]string, k, v string) {
	if v != "" {
		s[k] = v
	}
}

// sharedSettings are what every run file of a session records about it:
// the caller's Config.Settings, then the limits, endpoints, goals, mocks
// and SQL counter.
func (c *Config) sharedSettings(goals []analyzer.Goal, explain int) map[string]string {
	s := maps.Clone(c.Settings)
	if s == nil {
		s = map[string]string{}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = replayer.DefaultTimeout
	}
	put(s, "timeout", timeout.String())
	if explain > 0 {
		put(s, "explain", strconv.Itoa(explain))
	}
	put(s, "endpoints", strings.Join(c.Endpoints, ", "))
	var gs []string
	for _, g := range goals {
		gs = append(gs, g.String())
	}
	put(s, "goals", strings.Join(gs, "; "))
	if m := c.Mock; m != nil {
		services := strings.Join(m.Services, ", ")
		if services == "" {
			services = "all"
		}
		put(s, "mock", services)
		put(s, "mock_timing", or(m.Timing, "none"))
		put(s, "on_miss", or(m.OnMiss, "error"))
	}
	if p := c.Postgres; p != nil {
		put(s, "postgres", p.Upstream)
		if p.ClientTLS != nil {
			put(s, "postgres_tls", "offered")
		}
	}
	if p := c.MySQL; p != nil {
		put(s, "mysql", p.Upstream)
		if p.ClientTLS != nil {
			put(s, "mysql_tls", "offered")
		}
	}
	return s
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// planSettings records a run's load plan: its model and its numbers, and
// the load in words (report.SettingLoad).
func planSettings(s map[string]string, p replayer.LoadPlan, maxInFlight int) {
	s["model"] = p.Model()
	s[report.SettingLoad] = LoadDescription(p)
	switch p.Model() {
	case "closed":
		if len(p.Stages) > 0 {
			var st []string
			for _, x := range p.Stages {
				st = append(st, x.String())
			}
			put(s, "stages", strings.Join(st, " "))
			put(s, report.SettingVUs, strconv.Itoa(p.VUs))
		} else {
			put(s, report.SettingVUs, strconv.Itoa(max(p.VUs, 1)))
		}
	case "open":
		put(s, report.SettingRate, p.Rate.String())
		put(s, "max_inflight", strconv.Itoa(maxInFlight))
	case "recorded":
		put(s, "speed", strconv.FormatFloat(p.Speed, 'g', -1, 64))
	}
	if p.Duration > 0 {
		put(s, report.SettingDuration, p.Duration.String())
	}
	if p.Iterations > 0 || (p.Duration == 0 && len(p.Stages) == 0) {
		put(s, report.SettingIterations, strconv.Itoa(max(p.Iterations, 1)))
	}
}

// comparePlanSettings records a comparison's plan in both run files.
func comparePlanSettings(s map[string]string, p replayer.ComparePlan, maxInFlight int) {
	s["model"] = p.Load.Model()
	load := ""
	if p.Load.Model() == "open" {
		load = "open model, " + p.Load.Rate.String()
		put(s, report.SettingRate, p.Load.Rate.String())
		put(s, "max_inflight", strconv.Itoa(maxInFlight))
	} else {
		load = "closed model, " + plural(p.Load.VUs, "VU")
		put(s, report.SettingVUs, strconv.Itoa(p.Load.VUs))
	}
	put(s, report.SettingLoad, load+", "+p.Load.Duration.String()+" per side")
	put(s, report.SettingDuration, p.Load.Duration.String())
	if p.Sequential {
		put(s, "order", "sequential")
	} else {
		slices := p.Slices
		if slices == 0 {
			slices = replayer.DefaultSlices(p.Load.Duration)
		}
		order := "interleaved"
		if p.Concurrent {
			order = "concurrent"
		}
		put(s, analyzer.SettingOrder, order)
		put(s, analyzer.SettingCPUs, strconv.Itoa(runtime.NumCPU()))
		put(s, "slices", strconv.Itoa(slices))
	}
	put(s, "warmup", p.Warmup.String())
	put(s, "explain", strconv.Itoa(p.Explain))
}

// calibratedSettings records the rate a fair comparison found (st.Rate)
// in place of the closed model it was given.
func calibratedSettings(s map[string]string, p replayer.ComparePlan, st replayer.CompareStats) {
	if st.Rate.Count == 0 {
		return
	}
	s["model"] = "open"
	delete(s, report.SettingVUs)
	put(s, report.SettingRate, st.Rate.String())
	share, each := p.Calibrate, ""
	if p.Concurrent {
		share, each = share/2, " each, both builds at once"
	}
	put(s, report.SettingCalibrated, fmt.Sprintf("%s of %.0f/s at %s", strconv.FormatFloat(share, 'g', -1, 64), st.Throughput, plural(p.Load.VUs, "VU")))
	put(s, report.SettingLoad, fmt.Sprintf("open model, %s (fair load: %s%% of the slower build's %.0f/s under %s in warmup%s), %s per side",
		st.Rate, analyzer.FormatCount(100*share), st.Throughput, plural(p.Load.VUs, "VU"), each, p.Load.Duration))
}

// LoadDescription describes a plan in words for reports, e.g. "closed
// model, 8 VUs, for 30s".
func LoadDescription(p replayer.LoadPlan) string {
	var parts []string
	switch p.Model() {
	case "open":
		parts = append(parts, "open model, "+p.Rate.String())
	case "recorded":
		parts = append(parts, "as recorded, speed "+strconv.FormatFloat(p.Speed, 'g', -1, 64)+"×")
	default:
		if len(p.Stages) > 0 {
			var st []string
			for _, x := range p.Stages {
				st = append(st, x.String())
			}
			parts = append(parts, "closed model, stages "+strings.Join(st, " "))
		} else {
			parts = append(parts, fmt.Sprintf("closed model, %s", plural(max(p.VUs, 1), "VU")))
		}
	}
	if p.Iterations > 0 || (p.Duration == 0 && len(p.Stages) == 0) {
		parts = append(parts, plural(max(p.Iterations, 1), "iteration"))
	}
	if p.Duration > 0 {
		parts = append(parts, "for "+p.Duration.String())
	}
	return strings.Join(parts, ", ")
}

// plural formats n things, e.g. "1 VU", "2 iterations".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
