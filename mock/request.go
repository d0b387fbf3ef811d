package mock

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// request is a request reduced to what matching looks at.
type request struct {
	method   string
	scheme   string // "http" or "https"
	service  string // host:port, lower case, port explicit
	path     string // escaped, as sent
	rawQuery string
	query    url.Values
	body     body

	// Canonical forms, computed once: exactBody by newRequest, the loose
	// ones by prepare (for the volatility of the matcher at hand).
	exactBody                        string
	prepared                         bool
	looseBody, looseQuery, plainPath string            // plainPath: unescaped
	flat                             map[string]string // JSON body leaves (flattenJSON); nil when not JSON
	endpoint                         string            // set by templateKey
}

// prepare computes the forms the loose and template levels and the miss
// explanation compare, once. A request shared between goroutines (a
// recorded one) must be prepared before it is shared.
func (q *request) prepare(v volatility) {
	if q.prepared {
		return
	}
	q.looseBody = q.body.loose(v)
	q.looseQuery = looseQuery(q.query, v)
	q.plainPath = q.path
	if up, err := url.PathUnescape(q.path); err == nil {
		q.plainPath = up
	}
	if q.body.kind == bodyJSON {
		q.flat = flattenJSON(q.body.json)
	}
	q.prepared = true
}

// newRequest reduces a request addressed to service. target is the request
// URL (absolute or origin-form); its host is ignored in favour of service.
func newRequest(method, scheme, service string, target *url.URL, contentType string, b []byte) request {
	p := target.EscapedPath()
	if p == "" {
		p = "/"
	}
	q := request{
		method:   strings.ToUpper(method),
		scheme:   scheme,
		service:  service,
		path:     p,
		rawQuery: target.RawQuery,
		query:    parseQuery(target.RawQuery),
		body:     parseBody(contentType, b),
	}
	q.exactBody = q.body.exact()
	return q
}

// fromExchange reduces a recorded exchange; it fails when the exchange does
// not name a service it can be matched on.
func fromExchange(e *snapshots.Exchange) (request, error) {
	u, err := url.Parse(e.URL)
	if err != nil {
		return request{}, fmt.Errorf("exchange %d: url %q: %w", e.ID, e.URL, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "" {
		scheme = strings.ToLower(e.Protocol)
	}
	if scheme == "" {
		scheme = "http"
	}
	host := e.Service
	if host == "" {
		host = u.Host
	}
	service, err := normService(host, scheme)
	if err != nil {
		return request{}, fmt.Errorf("exchange %d: %w", e.ID, err)
	}
	if e.Method == "" {
		return request{}, fmt.Errorf("exchange %d: no method", e.ID)
	}
	return newRequest(e.Method, scheme, service, u, e.RequestHeader.Get("Content-Type"), e.RequestBody), nil
}

// normService returns host:port in lower case with the scheme's default
// port made explicit.
func normService(hostport, scheme string) (string, error) {
	if hostport == "" {
		return "", fmt.Errorf("no service (host:port)")
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		// No port: the scheme's default.
		host, port = strings.Trim(hostport, "[]"), defaultPort(scheme)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || port == "" || strings.ContainsAny(host, " /?#@") {
		return "", fmt.Errorf("bad service %q: want host:port", hostport)
	}
	return net.JoinHostPort(host, port), nil
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// String renders the request as "GET https://api.test/a?x=2", the scheme's
// default port left out.
func (q *request) String() string {
	host := q.service
	if h, p, err := net.SplitHostPort(q.service); err == nil && p == defaultPort(q.scheme) {
		host = h
		if strings.Contains(h, ":") {
			host = "[" + h + "]"
		}
	}
	s := q.method + " " + q.scheme + "://" + host + q.path
	if q.rawQuery != "" {
		s += "?" + q.rawQuery
	}
	return s
}

// exactKey: method, service, path, query as sent, body (JSON canonical).
func (q *request) exactKey() string {
	return key(q.method, q.service, q.path+"?"+q.rawQuery, q.exactBody)
}

// looseKey: method, service, unescaped path, query pairs sorted and body with
// volatile values masked. q must be prepared, as for templateKey.
func (q *request) looseKey() string {
	return key(q.method, q.service, q.plainPath+"?"+q.looseQuery, q.looseBody)
}

// templateKey: service and endpoint template (method plus path with id
// segments replaced), query and body compared as at the loose level; "" when
// the endpoint cannot be computed.
func (q *request) templateKey(rules []snapshots.Rule) string {
	if q.endpoint == "" {
		q.endpoint = snapshots.Endpoint(q.method, q.plainPath, rules)
	}
	if q.endpoint == "" {
		return ""
	}
	return key(q.endpoint, q.service, q.looseQuery, q.looseBody)
}

func key(method, service, target, body string) string {
	sum := sha256.Sum256([]byte(body))
	return method + "\x00" + service + "\x00" + target + "\x00" + string(sum[:16])
}
