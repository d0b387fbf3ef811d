package snapshots

import (
	"strings"
	"testing"
)

func TestEndpoint(t *testing.T) {
	tests := []struct {
		method, path string
		want         string
	}{
		{"GET", "/", "GET /"},
		{"GET", "", "GET /"},
		{"get", "/orders", "GET /orders"},
		{"GET", "/orders/", "GET /orders/"},
		{"GET", "/orders/42", "GET /orders/{id}"},
		{"GET", "/orders/42?expand=items", "GET /orders/{id}"},
		{"GET", "/orders/42#frag", "GET /orders/{id}"},
		{"GET", "/orders/0/status", "GET /orders/{id}/status"},
		{"GET", "/api/v1/users/123/orders/456", "GET /api/v1/users/{id}/orders/{id}"},
		{"GET", "/v2/items", "GET /v2/items"},
		{"GET", "/users/550e8400-e29b-41d4-a716-446655440000", "GET /users/{id}"},
		{"GET", "/users/550E8400-E29B-41D4-A716-446655440000/avatar", "GET /users/{id}/avatar"},
		{"GET", "/commits/9fceb02d0ae598e95dc970b74767f19372d61af8", "GET /commits/{id}"},
		{"GET", "/objects/5f2b9c0e1a7d4e3f", "GET /objects/{id}"},
		{"GET", "/objects/5f2b9c0e1a7d4e3", "GET /objects/{id}"}, // 15 hex, but digits and letters, ≥ 8
		{"GET", "/colors/deadbeef", "GET /colors/deadbeef"},      // hex letters only: a word
		{"GET", "/orders/ord_7f3a9b21", "GET /orders/{id}"},
		{"GET", "/customers/cus_NffrFeUfNV2Hib", "GET /customers/{id}"},
		{"GET", "/sessions/a1b2c3d4", "GET /sessions/{id}"},
		{"GET", "/sessions/a1b2c3d", "GET /sessions/a1b2c3d"}, // 7 characters: too short
		{"GET", "/reports/2024-01-31", "GET /reports/{id}"},
		{"GET", "/status", "GET /status"},
		{"GET", "/healthz", "GET /healthz"},
		{"GET", "/oauth/callback", "GET /oauth/callback"},
		{"GET", "/api/orders/status", "GET /api/orders/status"},
		{"GET", "/files/report.pdf", "GET /files/report.pdf"},
		{"GET", "/users/me/settings", "GET /users/me/settings"},
		{"GET", "/search/hello%20world", "GET /search/hello%20world"},
		{"POST", "/orders", "POST /orders"},
		{"GET", "http://api.example.com:8080/orders/7?x=1", "GET /orders/{id}"},
		{"GET", "https://api.example.com", "GET /"},
		{"GET", "/a//b", "GET /a//b"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			if got := Endpoint(tt.method, tt.path, nil); got != tt.want {
				t.Errorf("Endpoint(%q, %q) = %q, want %q", tt.method, tt.path, got, tt.want)
			}
		})
	}
}

func TestEndpointRules(t *testing.T) {
	rules, err := ParseRules([]string{
		"GET /orders/{id}/status",
		"get /orders/{order}",
		"* /files/{name}",
		"POST /api/{version}/items",
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path string
		want         string
	}{
		{"GET", "/orders/42/status", "GET /orders/{id}/status"},
		{"GET", "/orders/pending", "GET /orders/{order}"}, // a rule beats the heuristics
		{"GET", "/orders/42", "GET /orders/{order}"},
		{"DELETE", "/orders/42", "DELETE /orders/{id}"}, // method differs: heuristics
		{"PUT", "/files/report.pdf", "PUT /files/{name}"},
		{"GET", "/files/a/b", "GET /files/a/b"}, // segment counts differ
		{"POST", "/api/v3/items?x=1", "POST /api/{version}/items"},
		{"GET", "http://h:1/orders/42/status?y", "GET /orders/{id}/status"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			if got := Endpoint(tt.method, tt.path, rules); got != tt.want {
				t.Errorf("Endpoint(%q, %q) = %q, want %q", tt.method, tt.path, got, tt.want)
			}
		})
	}
}

func TestParseRule(t *testing.T) {
	good := map[string]string{
		"GET /orders/{id}/status": "GET /orders/{id}/status",
		"  post   /orders  ":      "POST /orders",
		"* /files/{name}":         "* /files/{name}",
		"GET /":                   "GET /",
	}
	for in, want := range good {
		r, err := ParseRule(in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", in, err)
			continue
		}
		if r.String() != want {
			t.Errorf("ParseRule(%q) = %q, want %q", in, r, want)
		}
	}
	bad := map[string]string{
		"":                  "want",
		"/orders":           "want",
		"GET orders":        "must start with /",
		"GET /orders?x=1":   "query string",
		"GET /orders/{}":    "empty parameter",
		"GET /orders/id{x}": "mixes",
		"G(T /orders":       "bad method",
		"GET /a /b":         "want",
	}
	for in, want := range bad {
		_, err := ParseRule(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseRule(%q) = %v, want an error naming the rule and saying %q", in, err, want)
		}
	}
}
