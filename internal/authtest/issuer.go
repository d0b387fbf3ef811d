package authtest

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The example storage's service user: a client allowed the
// client-credentials grant.
const (
	ClientID     = "sid1"
	ClientSecret = "verysecret"
)

// Issuer is a running OpenID provider.
type Issuer struct {
	// URL is the issuer (its discovery document is under it).
	URL string
	// TokenURL is its token endpoint; JWKSURL its keys.
	TokenURL, JWKSURL string
}

// shortLived is the example storage with JWT access tokens that live for
// lifetime.
type shortLived struct {
	*storage.Storage
	lifetime time.Duration
}

// jwtClient makes the client's access tokens JWTs.
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

func (s shortLived) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	c, err := s.Storage.ClientCredentials(ctx, id, secret)
	if err != nil {
		return nil, err
	}
	return jwtClient{c}, nil
}

func (s shortLived) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	id, _, err := s.Storage.CreateAccessToken(ctx, req)
	return id, time.Now().Add(s.lifetime), err
}

// StartIssuer starts an OpenID provider on loopback whose access tokens
// live for lifetime; it stops when the test ends.
func StartIssuer(t testing.TB, lifetime time.Duration) *Issuer {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	st := shortLived{Storage: storage.NewStorage(storage.NewUserStore(issuer)), lifetime: lifetime}
	key := sha256.Sum256([]byte("authtest"))
	cfg := &op.Config{CryptoKey: key, CryptoKeyId: "authtest", DefaultLogoutRedirectURI: "/logged-out"}
	p, err := op.NewProvider(cfg, st, op.StaticIssuer(issuer), op.WithAllowInsecure(),
		op.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("authtest: provider: %v", err)
	}
	srv.Config.Handler = p
	srv.Start()
	t.Cleanup(srv.Close)
	return &Issuer{URL: issuer, TokenURL: issuer + "/oauth/token", JWKSURL: issuer + "/keys"}
}
