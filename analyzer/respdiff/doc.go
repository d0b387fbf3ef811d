// Package respdiff compares answers to the same recorded requests: two
// builds' (Comparer.Endpoint), or a build's with the recording's
// (Comparer.Check). It compares the status, a set of headers
// (DefaultHeaders and Rules.Headers) and the body: JSON structurally (path
// → type and value; arrays by index, or as multisets under an unordered
// rule), other text by lines, the rest whole. What differs between a
// build's own answers to the same request is noise, learned per endpoint,
// ignored and listed: its values, never its JSON type (number 7 → string
// "7" there is still a difference); Rules add paths to ignore, arrays to
// compare as sets, and differences to accept as intended.
//
// A path names a part of an answer:
//
//	status              the status code
//	header:NAME         a header (names compare case-insensitively)
//	body                the whole body (binary bodies, cut ones, hashes)
//	line:N              line N of a text body, from 1
//	$.a.b, $.items[3]   a value in a JSON body; ["odd key"] quotes a key
//
// Differences are grouped by generalised path ($.items[3].id →
// $.items[*].id, Generalize). A rule's path may use [*] for any index and
// .* for any key, and names the value and everything inside it; "body"
// covers every body path.
//
// The package is pure: it reads no files. The analyzer feeds it the
// answers of run files (snapshots.ResponseSample, snapshots.ResponseHash).
package respdiff
