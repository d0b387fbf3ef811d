package replayer

import (
	"fmt"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// endpointFilter selects endpoints by exact name or glob; empty selects all.
type endpointFilter []string

func newEndpointFilter(patterns []string) (endpointFilter, error) {
	var f endpointFilter
	for _, p := range patterns {
		p = strings.Join(strings.Fields(p), " ")
		if p == "" {
			return nil, fmt.Errorf("replayer: empty endpoint filter")
		}
		m, rest, ok := strings.Cut(p, " ")
		switch {
		case strings.HasPrefix(p, "/"): // a path glob, perhaps with an operation: "/graphql {all*}"
		case ok:
			p = strings.ToUpper(m) + " " + rest
		default:
			return nil, fmt.Errorf("replayer: endpoint filter %q: want \"METHOD /path\" or \"/path\", either may use * and ?", p)
		}
		f = append(f, p)
	}
	return f, nil
}

// match reports whether endpoint ("GET /orders/{id}") is selected. A pattern
// starting with "/" is matched against the endpoint's path alone. A pattern
// that names no operation ("POST /graphql", not "POST /graphql {allBooks}")
// also matches an endpoint with one, so it selects all the operations at
// that path.
func (f endpointFilter) match(endpoint string) bool {
	if len(f) == 0 {
		return true
	}
	base, op := snapshots.SplitEndpoint(endpoint)
	for _, p := range f {
		if matchPattern(p, endpoint) || op != "" && !strings.Contains(p, " {") && matchPattern(p, base) {
			return true
		}
	}
	return false
}

// matchPattern matches one pattern of a filter against an endpoint.
func matchPattern(p, endpoint string) bool {
	if strings.HasPrefix(p, "/") {
		_, endpoint, _ = strings.Cut(endpoint, " ")
	}
	return glob(p, endpoint)
}

// glob matches s against pattern, in which "*" matches any run of
// characters ("/" included) and "?" any one character; all else is literal.
func glob(pattern, s string) bool {
	// Iterative matcher with backtracking to the last star.
	px, sx := 0, 0
	star, mark := -1, 0
	for sx < len(s) {
		switch {
		case px < len(pattern) && (pattern[px] == '?' || pattern[px] == s[sx]):
			px++
			sx++
		case px < len(pattern) && pattern[px] == '*':
			star, mark = px, sx
			px++
		case star >= 0:
			px = star + 1
			mark++
			sx = mark
		default:
			return false
		}
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}
