// Package authtest starts, for tests, a real OpenID provider that grants
// client-credentials tokens (zitadel's op package over its example storage,
// issuing RS256 JWT access tokens with a short lifetime) and a resource
// service that checks every token's signature against the provider's JWKS
// and its expiry, creates server-generated ids and reads them back, and
// logs clients in with a session cookie.
package authtest
