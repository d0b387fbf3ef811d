// Package tokens gives the credentials a replay puts on the requests it
// sends in place of the ones redacted at recording: the output of a command
// (Command) or an OAuth2 client-credentials grant (OAuth2). A Cache keeps the
// current token and fetches the next one before it expires (the JWT's exp,
// the grant's expires_in, or a fixed lifetime), once however many requests
// ask at the same time; Invalidate drops a token the target refused.
//
// Tokens and secrets never appear in an error: a failing command is named by
// its exit status and the last line of its standard error, a failing grant
// by the token endpoint's error code.
package tokens
