package mock

import (
	"bytes"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// redactedKeys returns the query parameter, form field and JSON member names
// whose recorded value is the redaction placeholder (snapshots.Redacted):
// the recorder replaced a secret there, so the live value can be anything.
// They are volatile: ignored at the loose and template levels.
func redactedKeys(exs []*snapshots.Exchange) []string {
	seen := map[string]bool{}
	var keys []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, e := range exs {
		if e == nil {
			continue
		}
		if _, query, ok := strings.Cut(e.URL, "?"); ok && strings.Contains(query, "REDACTED") {
			query, _, _ = strings.Cut(query, "#")
			redactedValues(parseQuery(query), add)
		}
		if !bytes.Contains(e.RequestBody, []byte("REDACTED")) {
			continue
		}
		b := parseBody(e.RequestHeader.Get("Content-Type"), e.RequestBody)
		switch b.kind {
		case bodyJSON:
			redactedMembers(b.json, add)
		case bodyForm:
			redactedValues(b.form, add)
		}
	}
	return keys
}

func redactedValues(q map[string][]string, add func(string)) {
	for k, vs := range q {
		for _, v := range vs {
			if v == snapshots.Redacted {
				add(k)
			}
		}
	}
}

func redactedMembers(v any, add func(string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == snapshots.Redacted {
				add(k)
			}
			redactedMembers(e, add)
		}
	case []any:
		for _, e := range t {
			redactedMembers(e, add)
		}
	}
}
