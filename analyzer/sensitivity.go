package analyzer

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultMinChange is the p95 minimum change in the form ParseMinChange
// reads: 10% and 5 ms (CompareOptions' MinRelative and MinChange).
const DefaultMinChange = "10%,5ms"

// ParseMinChange reads a p95 minimum change, "10%,5ms": a relative part
// ("10%") and an absolute one (a Go duration, "5ms"), in either order; a
// change counts when it is at least both. A part left out keeps its default
// (zero). It returns the options with MinRelative and MinChange set.
func ParseMinChange(s string) (CompareOptions, error) {
	var o CompareOptions
	parts := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" || len(parts) > 2 {
		return o, fmt.Errorf("%q: want a percentage and a duration, e.g. %s", s, DefaultMinChange)
	}
	var rel, abs bool
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if strings.HasSuffix(p, "%") {
			f, ok := percent(p)
			if !ok || rel {
				return o, fmt.Errorf("%q: %q is not one percentage above 0 (e.g. 10%%)", s, p)
			}
			o.MinRelative, rel = f, true
			continue
		}
		d, err := time.ParseDuration(p)
		if err != nil || d <= 0 || abs {
			return o, fmt.Errorf("%q: %q is neither a percentage (10%%) nor one positive duration (5ms)", s, p)
		}
		o.MinChange, abs = d, true
	}
	return o, nil
}

// ParseMinCPUChange reads --min-cpu-change, a percentage above 0 ("5%"),
// as CompareOptions.MinCPURelative.
func ParseMinCPUChange(s string) (float64, error) {
	f, ok := percent(s)
	if !ok {
		return 0, fmt.Errorf("%q: want one percentage above 0, e.g. 5%%", s)
	}
	return f, nil
}

// percent reads "P%" (above 0, below 1000) as a fraction: "5%" is 0.05.
func percent(s string) (float64, bool) {
	v, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if !ok || err != nil || f <= 0 || f >= 1000 {
		return 0, false
	}
	return f / 100, true
}

// ParseConfidence checks a confidence level for the intervals: between 0.5
// and 0.9999 (0.99 is 99%).
func ParseConfidence(c float64) error {
	if c < 0.5 || c > 0.9999 {
		return fmt.Errorf("%g: want a level between 0.5 and 0.9999, e.g. 0.95 for 95%%", c)
	}
	return nil
}
