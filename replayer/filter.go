package replayer

import (
	"fmt"
	"strings"
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
		if m, rest, ok := strings.Cut(p, " "); ok {
			p = strings.ToUpper(m) + " " + rest
		} else if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("replayer: endpoint filter %q: want \"METHOD /path\" or \"/path\", either may use * and ?", p)
		}
		f = append(f, p)
	}
	return f, nil
}

// match reports whether endpoint ("GET /orders/{id}") is selected. A pattern
// starting with "/" is matched against the endpoint's path alone.
func (f endpointFilter) match(endpoint string) bool {
	if len(f) == 0 {
		return true
	}
	_, path, _ := strings.Cut(endpoint, " ")
	for _, p := range f {
		s := endpoint
		if strings.HasPrefix(p, "/") {
			s = path
		}
		if glob(p, s) {
			return true
		}
	}
	return false
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
