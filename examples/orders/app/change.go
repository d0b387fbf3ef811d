package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Behaviour changes of Config.Change (APP_CHANGE): a build that answers
// differently, for testing that a comparison names what changed.
const (
	// ChangeType answers every "id" as a string ("7" for 7).
	ChangeType = "type"
	// ChangeDrop leaves "customer" out of every order.
	ChangeDrop = "drop"
	// ChangeReorder lists every order's items in reverse.
	ChangeReorder = "reorder"
	// ChangeStatus answers POST /orders with 200 instead of 201.
	ChangeStatus = "status"
)

// Changes lists the behaviour changes Config.Change accepts.
func Changes() []string { return []string{ChangeType, ChangeDrop, ChangeReorder, ChangeStatus} }

// ParseChange checks APP_CHANGE: empty, or one of Changes.
func ParseChange(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s != "" && !slices.Contains(Changes(), s) {
		return "", fmt.Errorf("APP_CHANGE %q: want one of %s", s, strings.Join(Changes(), ", "))
	}
	return s, nil
}

// changed serves h, changing its answers as kind says.
func changed(kind string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorded{header: w.Header(), status: http.StatusOK}
		h.ServeHTTP(rec, r)
		body := rec.body.Bytes()
		if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
			body = changeJSON(kind, body)
		}
		status := rec.status
		if kind == ChangeStatus && r.Method == http.MethodPost && status == http.StatusCreated {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		w.Write(body)
	})
}

// recorded holds an answer until it is changed.
type recorded struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorded) Header() http.Header         { return r.header }
func (r *recorded) WriteHeader(status int)      { r.status = status }
func (r *recorded) Write(b []byte) (int, error) { return r.body.Write(b) }

// changeJSON changes a JSON body; one that does not decode is left as is.
func changeJSON(kind string, body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return body
	}
	if !walkJSON(kind, v) {
		return body // as the unchanged service writes it, byte for byte
	}
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return append(out, '\n')
}

// walkJSON turns every "id" in v into a string (ChangeType), drops every
// "customer" (ChangeDrop) or reverses every "items" (ChangeReorder), and
// reports whether it changed anything.
func walkJSON(kind string, v any) (changed bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch {
			case kind == ChangeType && k == "id":
				if n, ok := e.(json.Number); ok {
					x[k], changed = n.String(), true
				}
			case kind == ChangeDrop && k == "customer":
				delete(x, k)
				changed = true
			case kind == ChangeReorder && k == "items":
				if list, ok := e.([]any); ok && len(list) > 1 {
					slices.Reverse(list)
					changed = true
				}
			default:
				changed = walkJSON(kind, e) || changed
			}
		}
	case []any:
		for _, e := range x {
			changed = walkJSON(kind, e) || changed
		}
	}
	return changed
}
