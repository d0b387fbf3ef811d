package snapshots

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// An operation tells apart the requests of an API that serves everything
// at one URL: a GraphQL operation, a JSON-RPC method. It follows the path
// template in braces, after a space: "POST /graphql {allBooks}",
// "POST /graphql {mutation createBook}", "POST /rpc {getUser}".

// bodyRulePrefix starts a body rule, the only kind there is so far.
const bodyRulePrefix = "json:"

// maxOperation is the longest operation name kept, in bytes; a longer value
// is no name but data, and leaves the endpoint alone.
const maxOperation = 100

// ParseBodyRule parses a body rule "json:$.method": the operation of a
// request whose body is JSON is the value at that path, a string, number or
// boolean. The path is "$" followed by steps ".name" or "[index]", e.g.
// "json:$.method", "json:$.params.op", "json:$.calls[0].name". For a body
// that is a JSON array (a batch) and a path starting with a name, the value
// of each element is taken, joined by ",".
func ParseBodyRule(s string) (Rule, error) {
	text := strings.TrimSpace(s)
	expr, ok := strings.CutPrefix(text, bodyRulePrefix)
	if !ok {
		return Rule{}, fmt.Errorf("parse body rule %q: want json:$.path, e.g. json:$.method", s)
	}
	p, err := parseJSONPath(expr)
	if err != nil {
		return Rule{}, fmt.Errorf("parse body rule %q: %w", s, err)
	}
	return Rule{body: p}, nil
}

// IsBodyRule reports whether r is a body rule (ParseBodyRule) rather than an
// endpoint template.
func (r Rule) IsBodyRule() bool { return r.body != nil }

// EndpointOf returns the endpoint of an exchange: Endpoint of its method and
// URL, followed for an inbound exchange by the operation its request names,
// if any (see Operation): "POST /graphql {allBooks}". Outbound exchanges get
// Endpoint alone, as the mock computes it. A gRPC call's endpoint is its
// method, in either direction: "gRPC route.RoutesService/FindRoute"
// (GRPCEndpoint); rules do not apply to it.
func EndpointOf(e *Exchange, rules []Rule) string {
	if e.IsGRPC() {
		return GRPCEndpoint(pathOf(e.URL))
	}
	ep := Endpoint(e.Method, e.URL, rules)
	if e.Direction == Outbound {
		return ep
	}
	if op := Operation(e.Method, e.URL, e.RequestBody, rules); op != "" {
		ep += " {" + op + "}"
	}
	return ep
}

// Operation returns the operation a request names, or "" when it names
// none. The body rules among rules come first, in order: the first that
// finds a value in a JSON body gives it. Otherwise a GraphQL request (POST
// with a JSON body holding a "query" document, or GET with ?query=) gives
// its operation: the operationName, else the name of the operation in the
// document, else the field name (not the alias) of its first root field;
// mutations and subscriptions are prefixed with their type
// ("mutation createBook"). A batch (a JSON array of requests) gives the
// operations of all its requests joined by ",". A body that is not valid
// JSON, or not complete (cut at the body limit), names none.
func Operation(method, target string, body []byte, rules []Rule) string {
	for _, r := range rules {
		if r.body == nil {
			continue
		}
		if op := r.body.operation(body); op != "" {
			return op
		}
	}
	switch strings.ToUpper(method) {
	case "POST":
		return graphQLBodyOperation(body)
	case "GET":
		return graphQLQueryOperation(target)
	}
	return ""
}

// SplitEndpoint splits an endpoint into its method and path template and
// its operation: "POST /graphql {allBooks}" gives "POST /graphql" and
// "allBooks"; an endpoint without an operation gives itself and "".
func SplitEndpoint(endpoint string) (base, op string) {
	method, rest, ok := strings.Cut(endpoint, " ")
	if !ok {
		return endpoint, ""
	}
	path, op, ok := strings.Cut(rest, " ")
	if !ok || !strings.HasPrefix(op, "{") || !strings.HasSuffix(op, "}") {
		return endpoint, ""
	}
	return method + " " + path, op[1 : len(op)-1]
}

// jsonPath is a parsed body rule path: each step a name or an index.
type jsonPath []jsonStep

type jsonStep struct {
	name  string
	index int // when name is ""
}

func parseJSONPath(s string) (jsonPath, error) {
	rest, ok := strings.CutPrefix(s, "$")
	if !ok {
		return nil, errors.New("the path must start with $, e.g. $.method")
	}
	var p jsonPath
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			n := strings.IndexAny(rest, ".[")
			if n < 0 {
				n = len(rest)
			}
			name := rest[:n]
			if name == "" || strings.ContainsAny(name, "]*\"' ") {
				return nil, fmt.Errorf("bad name %q after \".\"", name)
			}
			p, rest = append(p, jsonStep{name: name}), rest[n:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, errors.New("unclosed [")
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil || i < 0 {
				return nil, fmt.Errorf("bad index %q: want [0], [1], …", rest[:end+1])
			}
			p, rest = append(p, jsonStep{index: i}), rest[end+1:]
		default:
			return nil, fmt.Errorf("unexpected %q: want .name or [index]", rest)
		}
	}
	if len(p) == 0 {
		return nil, errors.New("the path names nothing: want e.g. $.method")
	}
	return p, nil
}

func (p jsonPath) String() string {
	var b strings.Builder
	b.WriteByte('$')
	for _, st := range p {
		if st.name != "" {
			b.WriteString("." + st.name)
		} else {
			b.WriteString("[" + strconv.Itoa(st.index) + "]")
		}
	}
	return b.String()
}

// operation returns the value at p in a JSON body, or "" if there is none.
func (p jsonPath) operation(body []byte) string {
	v, ok := decodeJSON(body)
	if !ok {
		return ""
	}
	if batch, ok := v.([]any); ok && p[0].name != "" {
		return joinBatch(batch, p.value)
	}
	return p.value(v)
}

// value returns the operation name at p in v.
func (p jsonPath) value(v any) string {
	for _, st := range p {
		switch x := v.(type) {
		case map[string]any:
			if st.name == "" {
				return ""
			}
			v = x[st.name]
		case []any:
			if st.name != "" || st.index >= len(x) {
				return ""
			}
			v = x[st.index]
		default:
			return ""
		}
	}
	switch x := v.(type) {
	case string:
		return operationName(strings.TrimSpace(x))
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

// operationName returns s if it can name an operation in an endpoint:
// printable, without braces, not too long; otherwise "".
func operationName(s string) string {
	if s == "" || len(s) > maxOperation || !utf8.ValidString(s) {
		return ""
	}
	for _, r := range s {
		if r == '{' || r == '}' || !unicode.IsPrint(r) {
			return ""
		}
	}
	return s
}

// joinBatch joins the operations of a batch's elements; "" when the batch is
// empty or any element names none.
func joinBatch(batch []any, op func(any) string) string {
	if len(batch) == 0 {
		return ""
	}
	ops := make([]string, len(batch))
	for i, v := range batch {
		if ops[i] = op(v); ops[i] == "" {
			return ""
		}
	}
	return strings.Join(ops, ",")
}

// decodeJSON decodes a whole JSON object or array, numbers as json.Number.
func decodeJSON(body []byte) (any, bool) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' && body[0] != '[' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// graphQLBodyOperation returns the operation of a GraphQL POST body.
func graphQLBodyOperation(body []byte) string {
	if !bytes.Contains(body, []byte(`"query"`)) && !bytes.Contains(body, []byte(`"operationName"`)) {
		return "" // cheap: most bodies are no GraphQL
	}
	v, ok := decodeJSON(body)
	if !ok {
		return ""
	}
	if batch, ok := v.([]any); ok {
		return joinBatch(batch, graphQLRequestOperation)
	}
	return graphQLRequestOperation(v)
}

// graphQLRequestOperation returns the operation of one decoded GraphQL
// request object.
func graphQLRequestOperation(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	query, _ := m["query"].(string)
	name, _ := m["operationName"].(string)
	_, ext := m["extensions"]
	return graphQLOperation(query, name, ext)
}

// graphQLQueryOperation returns the operation of a GraphQL GET request.
func graphQLQueryOperation(target string) string {
	_, raw, ok := strings.Cut(target, "?")
	if !ok || !strings.Contains(raw, "query=") && !strings.Contains(raw, "operationName=") {
		return ""
	}
	raw, _, _ = strings.Cut(raw, "#")
	q, err := url.ParseQuery(raw)
	if err != nil {
		return ""
	}
	return graphQLOperation(q.Get("query"), q.Get("operationName"), q.Has("extensions"))
}

// graphQLOperation names the operation of a GraphQL request: its query
// document, operationName and whether it has extensions (a persisted query
// sends those and no document).
func graphQLOperation(query, opName string, extensions bool) string {
	if opName != "" && !isGraphQLName(opName) {
		opName = ""
	}
	if query == "" {
		if extensions && opName != "" {
			return opName
		}
		return ""
	}
	doc, ok := parseGraphQL(query)
	if !ok {
		return ""
	}
	op := doc.ops[0]
	name := opName
	if name != "" {
		for _, o := range doc.ops {
			if o.name == name {
				op = o
				break
			}
		}
	} else if op.name != "" {
		name = op.name
	} else if name, ok = doc.firstField(op.sel, 0); !ok {
		return ""
	}
	if op.typ != "query" {
		return op.typ + " " + name
	}
	return name
}
