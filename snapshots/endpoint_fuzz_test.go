package snapshots

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseRule feeds arbitrary text to ParseRule (and ParseBodyRule for
// body rules): a rule that parses renders back with String() to text that
// parses to the same rule; text that does not parse gives a one-line error
// quoting it. With the rule, Endpoint of an arbitrary method and path never
// panics, starts with the method in upper case, and is a fixed point: the
// endpoint's own path gives the same endpoint again; when the rule does not
// match, each segment is the request's own, or {id} in place of an id.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"GET /orders/{id}", "* /a/{x}/b", "get /", "POST /graphql", "json:$.method",
		"json:$.params.op", "json:$.calls[0].name", " json:$[1][2] ", "GET /a?b", "GET /{}",
		"GET /a{b}", "GET", "GET /a /b", "G(T /a", "GET a", "json:$", "json:$.", "json:$[x]",
		"json:$[-1]", "json:$[+1]", "json:method", "ſ /a", "json:$.a\tb",
	} {
		f.Add(s, "GET", "/orders/42?x=1")
	}
	f.Add("GET /orders/{id}", "get", "http://h:1/orders/5f2b9c0e1a7d4e3f/x")
	f.Add("* /{a}/{b}", "DELETE", "/2024-01-31/ord_7f3a9b21")
	f.Add("GET /a/%2F", "GET", "a/%2F/../b#frag")
	f.Fuzz(func(t *testing.T, s, method, path string) {
		r, err := ParseRule(s)
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\r\n") || !strings.Contains(msg, strconv.Quote(s)) {
				t.Fatalf("%q: error not one line quoting the rule: %q", s, msg)
			}
			return
		}
		if strings.HasPrefix(strings.TrimSpace(s), bodyRulePrefix) {
			br, err := ParseBodyRule(s)
			if err != nil || br.String() != r.String() || !r.IsBodyRule() {
				t.Fatalf("%q: ParseBodyRule gives %v, %v; ParseRule %v", s, br, err, r)
			}
		} else if r.IsBodyRule() {
			t.Fatalf("%q: a template parsed as a body rule", s)
		}
		text := r.String()
		again, err := ParseRule(text)
		if err != nil || again.String() != text || again.IsBodyRule() != r.IsBodyRule() {
			t.Fatalf("%q: String() %q parses to %q, %v", s, text, again.String(), err)
		}
		rules := []Rule{r}
		ep := Endpoint(method, path, rules)
		prefix := strings.ToUpper(method) + " /"
		if !strings.HasPrefix(ep, prefix) {
			t.Fatalf("Endpoint(%q, %q, %q) = %q: want the prefix %q", method, path, s, ep, prefix)
		}
		if ep2 := Endpoint(method, ep[len(prefix)-1:], rules); ep2 != ep {
			t.Fatalf("Endpoint(%q, %q, %q) = %q, but its path gives %q", method, path, s, ep, ep2)
		}
		if tpl, ok := matchRules(method, path, rules); ok && tpl != ep {
			t.Fatalf("rule %q matches %q %q as %q, but Endpoint says %q", s, method, path, tpl, ep)
		} else if !ok {
			// No rule: each segment is the request's, or {id} for an id.
			segs, got := splitPath(pathOf(path)), splitPath(ep[len(prefix)-1:])
			for i := range got {
				if i >= len(segs) || got[i] != segs[i] && (got[i] != "{id}" || !isID(segs[i])) {
					t.Fatalf("Endpoint(%q, %q) = %q: segment %d is neither the request's nor {id} for an id", method, path, ep, i)
				}
			}
			if len(got) != len(segs) {
				t.Fatalf("Endpoint(%q, %q) = %q: %d segments, the path has %d", method, path, ep, len(got), len(segs))
			}
		}
		_ = Operation(method, path, []byte(path), rules)
	})
}
