package snapshots

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Rule is a user-given endpoint template, e.g. "GET /orders/{id}/status",
// or a body rule, e.g. "json:$.method" (see ParseBodyRule). In a template, a
// segment in braces matches any one path segment; other segments match
// themselves exactly.
type Rule struct {
	method   string   // upper case, or "*" for any; "" for a body rule
	segments []string // path segments; "{…}" matches any one segment
	body     jsonPath // a body rule's path; nil for a template
}

// ParseRule parses "METHOD /path/{param}/..." (METHOD may be "*"), or a body
// rule "json:$.path" as ParseBodyRule does, so that the rules a snapshot
// stores read back with one function.
func ParseRule(s string) (Rule, error) {
	if strings.HasPrefix(strings.TrimSpace(s), bodyRulePrefix) {
		return ParseBodyRule(s)
	}
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return Rule{}, fmt.Errorf("parse endpoint rule %q: want \"METHOD /path\", e.g. \"GET /orders/{id}\"", s)
	}
	method, path := strings.ToUpper(fields[0]), fields[1]
	if method != "*" && !isToken(method) {
		return Rule{}, fmt.Errorf("parse endpoint rule %q: bad method %q", s, fields[0])
	}
	if !strings.HasPrefix(path, "/") {
		return Rule{}, fmt.Errorf("parse endpoint rule %q: path must start with /", s)
	}
	if strings.ContainsAny(path, "?#") {
		return Rule{}, fmt.Errorf("parse endpoint rule %q: a query string is never part of an endpoint", s)
	}
	segs := splitPath(path)
	for _, seg := range segs {
		if isParam(seg) {
			if len(seg) == 2 {
				return Rule{}, fmt.Errorf("parse endpoint rule %q: empty parameter name {}", s)
			}
			continue
		}
		if strings.ContainsAny(seg, "{}") {
			return Rule{}, fmt.Errorf("parse endpoint rule %q: segment %q mixes a parameter and text", s, seg)
		}
	}
	return Rule{method: method, segments: segs}, nil
}

// ParseRules parses each of ss with ParseRule; the error joins those of the
// rules that did not parse.
func ParseRules(ss []string) ([]Rule, error) {
	var rules []Rule
	var errs []error
	for _, s := range ss {
		r, err := ParseRule(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rules = append(rules, r)
	}
	return rules, errors.Join(errs...)
}

// String returns the rule as ParseRule accepts it.
func (r Rule) String() string {
	if r.body != nil {
		return bodyRulePrefix + r.body.String()
	}
	return r.method + " /" + strings.Join(r.segments, "/")
}

// match returns the endpoint r gives a request, and whether it applies.
func (r Rule) match(method string, segs []string) (string, bool) {
	if r.method == "" || (r.method != "*" && r.method != method) || len(segs) != len(r.segments) {
		return "", false
	}
	for i, seg := range r.segments {
		if !isParam(seg) && seg != segs[i] {
			return "", false
		}
	}
	return method + " /" + strings.Join(r.segments, "/"), true
}

// matchRules returns the endpoint the first matching rule gives a request.
func matchRules(method, target string, rules []Rule) (string, bool) {
	if len(rules) == 0 {
		return "", false
	}
	method = strings.ToUpper(method)
	segs := splitPath(pathOf(target))
	for _, r := range rules {
		if ep, ok := r.match(method, segs); ok {
			return ep, true
		}
	}
	return "", false
}

// Endpoint returns the endpoint of a request: method plus path template.
// Rules win, the first that matches; otherwise path segments that are
// numbers, UUIDs, long hex or id-like tokens become {id}. The query string is
// not part of it. path may also be an absolute URL.
func Endpoint(method, path string, rules []Rule) string {
	if ep, ok := matchRules(method, path, rules); ok {
		return ep
	}
	method = strings.ToUpper(method)
	segs := splitPath(pathOf(path))
	for i, seg := range segs {
		if isID(seg) {
			segs[i] = "{id}"
		}
	}
	return method + " /" + strings.Join(segs, "/")
}

// pathOf returns the path of a request target: origin form ("/a?b"),
// absolute form ("http://h/a?b") or anything else a client sent.
func pathOf(target string) string {
	if i := strings.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	if strings.HasPrefix(target, "/") {
		return target
	}
	if u, err := url.Parse(target); err == nil && u.Scheme != "" {
		return u.EscapedPath()
	}
	return "/" + target
}

// splitPath splits "/a/b/" into ["a", "b", ""]; "/" and "" give [""].
func splitPath(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "/"), "/")
}

func isParam(seg string) bool {
	return len(seg) >= 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

// isID reports whether a path segment names one resource among many rather
// than a fixed part of the API.
func isID(seg string) bool {
	if seg == "" {
		return false
	}
	var digits, letters, hex, other int
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
			hex++
		case c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F':
			letters++
			hex++
		case c >= 'g' && c <= 'z' || c >= 'G' && c <= 'Z':
			letters++
		case c == '%' && i+2 < len(seg): // an escaped byte: its hex digits are no digits of an id
			other++
			i += 2
		case c == '-' || c == '_' || c == '.' || c == '~' || c == ':' || c == '+' || c == '=':
			other++
		default:
			return false // not an identifier we know: leave it
		}
	}
	switch {
	case digits == len(seg): // 42
		return true
	case IsUUID(seg):
		return true
	case hex == len(seg) && len(seg) >= 16: // 5f2b9c0e1a7d4e3f
		return true
	case letters == 0 && digits > 0 && len(seg) >= 8: // 2024-01-31, 1.2.3.4.5
		return true
	case digits > 0 && len(seg) >= 8: // ord_7f3a9b21, a1b2c3d4
		return true
	}
	return false
}

// IsUUID reports whether s is a UUID in text form: 8-4-4-4-12 hex digits,
// either case. Endpoint takes such a path segment for an identifier; the
// mock takes such a value for one that changes on every call.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// isToken reports whether s is an HTTP token (a method name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
