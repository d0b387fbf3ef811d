package tokens

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// OAuth2 fetches tokens with the OAuth2 client-credentials grant
// (RFC 6749 §4.4) through golang.org/x/oauth2/clientcredentials.
type OAuth2 struct {
	// TokenURL is the authorization server's token endpoint.
	TokenURL string
	// ClientID and ClientSecret authenticate the client (HTTP Basic, or
	// the form when the server wants that). The secret comes from the
	// environment, never from a flag.
	ClientID, ClientSecret string
	// Scopes are asked for; none: the server's default.
	Scopes []string
	// HTTPClient sends the token requests; nil: one with a 30 s timeout.
	HTTPClient *http.Client
}

// Fetch asks the token endpoint for one token. Its expiry is the answer's
// expires_in, else the JWT's exp, else unknown.
func (o OAuth2) Fetch(ctx context.Context) (string, time.Time, error) {
	cfg := clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: o.TokenURL, Scopes: o.Scopes}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			// Never the body: it may echo what was sent.
			code := re.ErrorCode
			if code == "" && re.Response != nil {
				code = re.Response.Status
			}
			return "", time.Time{}, fmt.Errorf("oauth2 token %s: %s", o.TokenURL, code)
		}
		return "", time.Time{}, fmt.Errorf("oauth2 token %s: %w", o.TokenURL, err)
	}
	exp := tok.Expiry
	if jexp, ok := JWTExpiry(tok.AccessToken); ok && (exp.IsZero() || jexp.Before(exp)) {
		exp = jexp
	}
	return tok.AccessToken, exp, nil
}
