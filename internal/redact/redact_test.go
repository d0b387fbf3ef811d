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
	want := []string{"APP_SLOW=1", "API_TOKEN=" + Mask, "DATABASE_URL=postgres://u:[REDACTED]@db:5432/x", "MSG='a b'", "PLAIN=postgres://u@db/x"}
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
	want := []string{"APP_SLOW=1", "API_TOKEN=[REDACTED]", "DATABASE_URL=postgres://u:[REDACTED]@db:5432/x", "APP_DELAY='GET /a=5ms'", "EMPTY="}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
}

func TestCommand(t *testing.T) {
	for in, want := range map[string]string{
		"psql postgres://u:s3cret@127.0.0.1/db -c 'TRUNCATE orders'": "psql postgres://u:[REDACTED]@127.0.0.1/db -c 'TRUNCATE orders'",
		"PGPASSWORD=s3cret psql -h db":                               "PGPASSWORD=[REDACTED] psql -h db",
		"sh -c 'API_TOKEN=abc ./app --port 8080'":                    "sh -c 'API_TOKEN=[REDACTED] ./app --port 8080'",
		"./app --password=s3cret --db-password s3cret -v":            "./app --password=[REDACTED] --db-password [REDACTED] -v",
		"./app --api-key 'k 1' --name x":                             "./app --api-key [REDACTED] --name x",
		"PWD=/tmp ./orders --listen :8080":                           "PWD=/tmp ./orders --listen :8080",
		"./app --token \"a b c\" -q":                                 "./app --token [REDACTED] -q",
		"":                                                           "",
	} {
		if got := Command(in); got != want {
			t.Errorf("Command(%q) = %q; want %q", in, got, want)
		}
	}
}
