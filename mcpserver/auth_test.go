package mcpserver

import (
	"slices"
	"strings"
	"testing"
)

// The tools pass the token flags to the command; the OAuth2 secret is no
// input (the child inherits the server's environment, where it lives).
func TestAuthInputsBecomeFlags(t *testing.T) {
	in := RunInput{Snapshot: "s.snap", Out: "r.run", Target: "http://x", Load: Load{Auth: Auth{
		OAuth2TokenURL: "https://auth/token", OAuth2ClientID: "c", OAuth2Scopes: []string{"a", "b"},
		OAuth2ClientSecretEnv: "MY_SECRET", SessionKey: "X-Client", NoCorrelate: true, ShiftTimes: true,
		TokenHeader: "X-Token", TokenFormat: "Token {token}"}}}
	got := in.args()
	for _, want := range []string{"--oauth2-token-url=https://auth/token", "--oauth2-client-id=c", "--oauth2-scope=a", "--oauth2-scope=b",
		"--oauth2-client-secret-env=MY_SECRET", "--session-key=X-Client", "--no-correlate", "--shift-times",
		"--token-header=X-Token", "--token-format=Token {token}"} {
		if !slices.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
	cmp := CompareInput{Snapshot: "s.snap", Load: Load{Auth: Auth{TokenCmd: "get-token", TokenTTL: "5m"}}}
	if a := strings.Join(cmp.args(), " "); !strings.Contains(a, "--token-cmd=get-token") || !strings.Contains(a, "--token-ttl=5m") {
		t.Errorf("compare args %q lack the token command", a)
	}
}
