// Package pgwire is the PostgreSQL wire protocol of a counter
// (sqlcore.Wire): it starts client connections and decodes both directions
// (package pgproto3 for the messages it needs whole), and completes
// statements through a sqlcore.Recorder.
//
// # The wire
//
// The proxy answers GSSENCRequest with 'N', and SSLRequest with 'N' too
// unless Config.ClientTLS is set: then with 'S' and a TLS handshake, for apps
// that insist on sslmode=require or verify-full. With Config.UpstreamTLS it
// asks the server for TLS on every connection and fails the client's when
// the server declines. It forwards the StartupMessage, and from then on
// relays both directions
// without changing a byte: each read is decoded (message framing, and the
// few messages that matter) and then written on whole. Authentication (trust,
// md5, SCRAM-SHA-256, …) passes through untouched; a CancelRequest is
// forwarded to the server on a new connection. A malformed message (a bad
// length, an unknown startup code) ends that connection with the reason
// logged; a peer that hangs up mid-message ends its connection only.
//
// # Counting
//
// A statement counts once, when the server completes it: CommandComplete,
// EmptyQueryResponse, or the ErrorResponse that ends it. This is exact for
// the simple protocol (a query string with several statements counts each,
// and each gets its own piece of the text, split on top-level semicolons),
// for the extended protocol (the text of an Execute comes from the Parse of
// its statement, named or unnamed, through the portal its Bind made), for
// pipelines (after an error the server skips to the next Sync, and so does
// the count), for portals run in pieces (one statement, all its rows) and for
// COPY. An error in Parse or Bind counts as a failed statement once. Rows
// come from the command tag, else from the DataRows. A statement that ends
// in an ErrorResponse is counted apart, as an error of its fingerprint
// (Stats.Errors, FingerprintStats.Errors, snapshots.SQLCount.Errors): it is
// in neither the completed count nor the database time.
//
// Fingerprints fold literals and parameters to "?" (negative numbers, IN
// lists and VALUES rows of any length included) and keep the rest of the
// text readable; see Fingerprint. They are computed once per statement
// shape and cached.
//
// # Counting
//
// # What it does not do
//
// It does not relay TLS connections through its event loops (they take a
// goroutine per direction, as on other systems), keep statement text across connections, see statements prepared before the
// client connected through it (an Execute of such a statement counts under
// "(unknown prepared statement NAME)"), or map a Sync that follows a COPY
// FROM STDIN in the same extended-protocol pipeline (the server ignores
// it, the proxy does not); it never rewrites traffic.
package pgwire
