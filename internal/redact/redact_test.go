package redact

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "X-Api-Key": true, "DB_PASSWORD": true, "PGPASSWD": true, "SESSION_ID": true,
		"X-Signature": true, "AWS_CREDENTIALS": true, "Cookie": true, "GITHUB_TOKEN": true, "client_secret": true,
		"APP_SLOW": false, "DATABASE_URL": false, "Accept": false, "baggage": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v; want %v", name, got, want)
		}
	}
}

func TestEnv(t *testing.T) {
	got := Env([]string{"APP_SLOW=1", "API_TOKEN=abc", "DATABASE_URL=postgres://u:pw@db:5432/x", "MSG=a b", "PLAIN=postgres://u@db/x"})
	want := []string{"APP_SLOW=1", "API_TOKEN=" + Mask, "DATABASE_URL=postgres://u:xxxxx@db:5432/x", "MSG='a b'", "PLAIN=postgres://u@db/x"}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
}

func TestHeaders(t *testing.T) {
	h := http.Header{"X-Api-Key": {"k"}, "Baggage": {"sd-routing-key=pr-1"}, "Accept": {"a", "b"}}
	if got, want := Headers(h), "Accept: a, b; Baggage: sd-routing-key=pr-1; X-Api-Key: "+Mask; got != want {
		t.Errorf("Headers = %q; want %q", got, want)
	}
}

func TestEnvQuotes(t *testing.T) {
	got := Env([]string{"APP_SLOW=1", "API_TOKEN=abc", "DATABASE_URL=postgres://u:secret@db:5432/x", "APP_DELAY=GET /a=5ms", "EMPTY="})
	want := []string{"APP_SLOW=1", "API_TOKEN=[REDACTED]", "DATABASE_URL=postgres://u:xxxxx@db:5432/x", "APP_DELAY='GET /a=5ms'", "EMPTY="}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
}
