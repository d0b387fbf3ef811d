package respdiff

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// DefaultHeaders are the headers compared unless a rule ignores them:
// those that change what a client does with an answer. Headers that vary
// by nature (Date, ETag, request ids) and transport ones (Content-Length,
// Content-Encoding: bodies are compared decoded) are left out.
var DefaultHeaders = []string{"Content-Type", "Location", "Cache-Control", "Content-Disposition", "Content-Language"}

// Rules say what a comparison of answers ignores, accepts as intended and
// compares beyond the defaults. The zero value compares DefaultHeaders,
// status and bodies, ignoring only what it learns is noise.
type Rules struct {
	// Ignore lists paths whose differences are ignored (listed as such):
	// JSON paths ($.served_at, $.items[*].etag), status, body, line:N,
	// header:NAME.
	Ignore []string `json:"ignore,omitempty"`
	// IgnoreHeaders lists headers not compared (nor captured).
	IgnoreHeaders []string `json:"ignore_headers,omitempty"`
	// Unordered lists JSON array paths compared as multisets.
	Unordered []string `json:"unordered,omitempty"`
	// Accept lists paths whose differences are intended: listed as
	// accepted, not counted as differing.
	Accept []string `json:"accept,omitempty"`
	// Headers lists headers compared beyond DefaultHeaders.
	Headers []string `json:"headers,omitempty"`
}

// AddFlags registers --ignore, --ignore-header, --unordered, --accept-diff
// and --compare-header on f, each repeatable and taking comma-separated
// lists too.
func (r *Rules) AddFlags(f *pflag.FlagSet) {
	f.Var(newListValue(&r.Ignore), "ignore", "ignore response differences at `PATH` (JSON path such as '$.served_at' or '$.items[*].etag', or status, body, line:N, header:NAME; repeatable)")
	f.Var(newListValue(&r.IgnoreHeaders), "ignore-header", "do not compare response header `NAME` (repeatable)")
	f.Var(newListValue(&r.Unordered), "unordered", "compare the JSON array at `PATH` as a set, in any order, e.g. '$.items' (repeatable)")
	f.Var(newListValue(&r.Accept), "accept-diff", "an intended response difference at `PATH`: listed as accepted, not a regression (repeatable)")
	f.Var(newListValue(&r.Headers), "compare-header", "also compare response header `NAME` (default: "+strings.Join(DefaultHeaders, ", ")+"; repeatable)")
}

// IsZero reports whether r gives no rule.
func (r Rules) IsZero() bool {
	return len(r.Ignore)+len(r.IgnoreHeaders)+len(r.Unordered)+len(r.Accept)+len(r.Headers) == 0
}

// Validate returns a one-line error naming the flag and the path or name
// that is not well formed; nil when every rule is.
func (r Rules) Validate() error {
	_, err := r.Compile()
	return err
}

// CompareHeaders returns the headers compared (and so worth capturing):
// DefaultHeaders and Headers without IgnoreHeaders, canonical, each once.
func (r Rules) CompareHeaders() []string {
	ignored := map[string]bool{}
	for _, h := range r.IgnoreHeaders {
		ignored[http.CanonicalHeaderKey(strings.TrimSpace(h))] = true
	}
	var out []string
	for _, h := range slices.Concat(DefaultHeaders, r.Headers) {
		h = http.CanonicalHeaderKey(strings.TrimSpace(h))
		if h != "" && !ignored[h] && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// Comparer compares answers under a set of Rules; Compile makes one. It
// is safe for concurrent use.
type Comparer struct {
	rules          Rules
	ignore, accept []rulePath
	unordered      [][]seg
	headers        []string
	ignoredHeaders []string
}

// Compile validates r and returns its Comparer; the error is one line
// naming the flag, e.g. `--ignore: path "served_at": want a JSON path
// starting with $ …`.
func (r Rules) Compile() (*Comparer, error) {
	c := &Comparer{rules: r, headers: r.CompareHeaders()}
	for _, g := range []struct {
		flag  string
		paths []string
		into  *[]rulePath
	}{{"--ignore", r.Ignore, &c.ignore}, {"--accept-diff", r.Accept, &c.accept}} {
		for _, s := range g.paths {
			p, err := parseRulePath(strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", g.flag, err)
			}
			*g.into = append(*g.into, p)
		}
	}
	for _, s := range r.Unordered {
		segs, err := parseJSONPath(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--unordered: %w", err)
		}
		c.unordered = append(c.unordered, segs)
	}
	for _, g := range []struct {
		flag  string
		names []string
	}{{"--ignore-header", r.IgnoreHeaders}, {"--compare-header", r.Headers}} {
		for _, h := range g.names {
			if h = strings.TrimSpace(h); h == "" || strings.ContainsAny(h, " \t\r\n:") {
				return nil, fmt.Errorf("%s %q: want a header name, e.g. X-Request-Id", g.flag, h)
			}
			if g.flag == "--ignore-header" {
				c.ignoredHeaders = append(c.ignoredHeaders, http.CanonicalHeaderKey(h))
			}
		}
	}
	return c, nil
}

// Rules returns the rules c was compiled from.
func (c *Comparer) Rules() Rules { return c.rules }

// matches reports whether the rule path p names d's path.
func (p rulePath) matches(d Diff) bool {
	switch p.kind {
	case "status":
		return d.Path == "status"
	case "header":
		return d.Path == "header:"+p.header
	case "body":
		return d.Path == "body" || strings.HasPrefix(d.Path, "line:") || strings.HasPrefix(d.Path, "$")
	case "line":
		return d.Path == "line:"+strconv.Itoa(p.line)
	case "json":
		return d.segs != nil && matchSegs(p.segs, d.segs)
	}
	return false
}

// firstMatch returns the first of paths that names d, or false.
func firstMatch(paths []rulePath, d Diff) (rulePath, bool) {
	for _, p := range paths {
		if p.matches(d) {
			return p, true
		}
	}
	return rulePath{}, false
}

// listValue is a repeatable flag whose values may be comma-separated lists;
// commas inside [...] or quotes do not split.
type listValue struct {
	to  *[]string
	set bool
}

func newListValue(to *[]string) *listValue { return &listValue{to: to} }

func (v *listValue) String() string {
	if v.to == nil {
		return ""
	}
	return strings.Join(*v.to, ",")
}

func (v *listValue) Type() string { return "strings" }

func (v *listValue) Set(s string) error {
	if !v.set {
		*v.to = nil
		v.set = true
	}
	*v.to = append(*v.to, splitList(s)...)
	return nil
}

// splitList splits s at commas outside brackets and double quotes,
// dropping empty items.
func splitList(s string) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '[':
			depth++
		case c == ']':
			depth = max(0, depth-1)
		case c == ',' && depth == 0:
			out = appendItem(out, s[start:i])
			start = i + 1
		}
	}
	return appendItem(out, s[start:])
}

func appendItem(out []string, s string) []string {
	if s = strings.TrimSpace(s); s != "" {
		out = append(out, s)
	}
	return out
}

// Diff compares two answers under c's headers and unordered arrays, with
// no noise learned and nothing ignored or accepted: every difference, the
// reference answer a first.
func (c *Comparer) Diff(a, b Answer) []Diff {
	n := &noise{user: c.unordered}
	return diffAnswers(a, b, &pairEnv{headers: c.headers, unordered: n.unordered})
}
