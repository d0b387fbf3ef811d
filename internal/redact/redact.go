// Package redact keeps secrets out of what replay writes about a run: the
// one list of secret-looking names for the whole tool, and the masking of
// environment entries, headers and URLs for run files and reports.
//
// Recorded traffic is redacted by a Redactor (see Config), which the
// snapshot writer applies to every exchange it writes.
package redact

import (
	"net/http"
	"slices"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// Mask replaces a secret value, as in snapshots.
const Mask = snapshots.Redacted

// URL masks the password of every URL in v with Mask, e.g.
// postgres://u:[REDACTED]@host/db, as Command does; other text comes back
// as it is.
func URL(v string) string { return urlPasswordsWith(v, Mask) }

// Env returns KEY=VALUE entries fit for a report: secret-looking values
// masked, passwords in URLs masked, values with spaces or shell
// metacharacters quoted.
func Env(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if SecretName(k) {
			v = Mask
		} else {
			v = URL(v)
		}
		if strings.ContainsAny(v, " \t'\"$`\\") {
			v = "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
		}
		out = append(out, k+"="+v)
	}
	return out
}

// Headers formats h for a report, "Name: value; Name: value" sorted by
// name, with secret-looking values masked; empty when h is.
func Headers(h http.Header) string {
	var hs []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	}) {
		v := strings.Join(h.Values(k), ", ")
		if SecretName(k) {
			v = Mask
		}
		hs = append(hs, k+": "+v)
	}
	return strings.Join(hs, "; ")
}
