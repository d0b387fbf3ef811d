package replayer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// TruncatedError is New's error when recorded requests it would replay had
// their body cut at recording (snapshots.Exchange.RequestTruncated: the
// recorder's body limit) and Config.AllowTruncated is off: replaying them
// would send bodies the app never received and count the answers as
// successes.
type TruncatedError struct {
	// Endpoints counts the truncated requests per endpoint.
	Endpoints map[string]int64
}

func (e *TruncatedError) Error() string {
	var total int64
	for _, n := range e.Endpoints {
		total += n
	}
	return fmt.Sprintf("%d recorded %s had %s body cut at recording (%s): record again with a larger --body-limit, or pass --allow-truncated to replay them cut and counted apart",
		total, plural(total, "request", "requests"), plural(total, "its", "their"), FormatTruncated(e.Endpoints))
}

// FormatTruncated lists counts per endpoint, busiest first, then by name:
// "POST /upload: 3, PUT /files/{id}: 1".
func FormatTruncated(counts map[string]int64) string {
	eps := make([]string, 0, len(counts))
	for ep := range counts {
		eps = append(eps, ep)
	}
	slices.SortFunc(eps, func(a, b string) int {
		if counts[a] != counts[b] {
			return int(counts[b] - counts[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(eps))
	for i, ep := range eps {
		parts[i] = fmt.Sprintf("%s: %d", ep, counts[ep])
	}
	return strings.Join(parts, ", ")
}

// Truncated counts, per endpoint, the recorded requests among exchanges
// that a Replayer selecting endpoints (Config.Endpoints) would replay whose
// body was cut at recording; nil when none was.
func Truncated(exchanges []*snapshots.Exchange, endpoints []string) (map[string]int64, error) {
	filter, err := newEndpointFilter(endpoints)
	if err != nil {
		return nil, err
	}
	var counts map[string]int64
	for _, e := range exchanges {
		if e == nil || (e.Direction != "" && e.Direction != snapshots.Inbound) || !e.RequestTruncated() {
			continue
		}
		if ep := templateEndpoint(e); filter.match(ep) {
			if counts == nil {
				counts = map[string]int64{}
			}
			counts[ep]++
		}
	}
	return counts, nil
}

// Truncated counts, per endpoint, the requests replayed whose body was cut
// at recording (only with Config.AllowTruncated); nil when none was.
func (r *Replayer) Truncated() map[string]int64 { return r.truncated }

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
