package replayer

import (
	"net/http"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// isRedacted reports whether a recorded header value was redacted:
// "[REDACTED]", or a scheme kept before it ("Bearer [REDACTED]").
func isRedacted(v string) bool {
	return v == Redacted || strings.HasSuffix(v, " "+Redacted)
}

// redactedHeaders returns the recorded headers whose value was redacted,
// with the scheme recorded before the marker ("Bearer "); those override
// supplies are not.
func redactedHeaders(rec, override http.Header) map[string]string {
	var out map[string]string
	for k, vs := range rec {
		ck := http.CanonicalHeaderKey(k)
		if _, ok := override[ck]; ok || ck == "Cookie" {
			continue
		}
		for _, v := range vs {
			if isRedacted(v) {
				if out == nil {
					out = map[string]string{}
				}
				out[ck] = strings.TrimSuffix(v, Redacted)
			}
		}
	}
	return out
}

// credential reports whether the recording redacted a credential header
// of t (Authorization, Proxy-Authorization, X-Api-Key, …).
func (t *template) credential() bool {
	return len(t.redacted) > 0
}

// placeToken puts tok in h: in the stage's TokenHeader, or in every header
// of t the recording redacted.
func (s *stage) placeToken(h http.Header, t *template, tok string) {
	if name := s.cfg.TokenHeader; name != "" {
		h.Set(name, formatToken(s.cfg.TokenFormat, http.CanonicalHeaderKey(name), "", tok))
		return
	}
	for k, scheme := range t.redacted {
		h.Set(k, formatToken(s.cfg.TokenFormat, k, scheme, tok))
	}
}

// formatToken is the header value carrying tok: format with {token}
// replaced, else the recorded scheme and the token, else "Bearer " and the
// token for Authorization headers and the token alone for others.
func formatToken(format, header, scheme, tok string) string {
	switch {
	case format != "":
		return strings.ReplaceAll(format, "{token}", tok)
	case scheme != "":
		return scheme + tok
	case header == "Authorization" || header == "Proxy-Authorization":
		return "Bearer " + tok
	}
	return tok
}

// refused counts a request whose recorded credential was redacted, sent
// without a token source, that the target answered 401 or 403.
func (r *Replayer) refused(t *template, res *snapshots.Result) {
	if (res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden) && t.credential() &&
		(r.stage == nil || r.stage.cfg.Tokens == nil) {
		r.redactedRefused.Add(1)
	}
}
