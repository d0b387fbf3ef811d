package ca

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/golden"

	"github.com/google/go-cmp/cmp"
)

// infoFixture is a CA kept in a directory whose name needs quoting.
func infoFixture() *Info {
	dir := "/home/u/my ca"
	cert, bundle := dir+"/ca.pem", dir+"/bundle.pem"
	return &Info{
		Dir:         dir,
		Cert:        cert,
		Key:         dir + "/ca-key.pem",
		Bundle:      bundle,
		Created:     true,
		Subject:     "replay CA 1a2b3c",
		Fingerprint: "AB:CD:EF",
		NotAfter:    time.Date(2035, 3, 4, 5, 6, 7, 0, time.UTC),
		Env:         map[string]string{"SSL_CERT_FILE": bundle, "NODE_EXTRA_CA_CERTS": cert, "REQUESTS_CA_BUNDLE": bundle, "CURL_CA_BUNDLE": bundle},
		Keytool:     "keytool -importcert -noprompt -cacerts -storepass changeit -alias replay-ca -file '" + cert + "'",
	}
}

func TestInfoWriters(t *testing.T) {
	info := infoFixture()
	for _, tt := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"info.txt", func(b *bytes.Buffer) error { return info.WriteText(b) }},
		{"info.json", func(b *bytes.Buffer) error { return info.WriteJSON(b) }},
		{"info.env", func(b *bytes.Buffer) error { return info.WriteEnv(b) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tt.name+".golden", b.Bytes())
		})
	}

	// A CA found rather than made says nothing of its making.
	info.Created = false
	var b bytes.Buffer
	if err := info.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "CA certificate  /home/u/my ca/ca.pem\n") {
		t.Errorf("WriteText of a CA found:\n%s", b.String())
	}
}

func TestDescribe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's ca")
	c, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Describe(c)
	if err != nil {
		t.Fatal(err)
	}
	cert, bundle := filepath.Join(dir, CertFile), filepath.Join(dir, BundleFile)
	want := &Info{
		SchemaVersion: 1,
		Dir:           dir,
		Cert:          cert,
		Key:           filepath.Join(dir, KeyFile),
		Bundle:        bundle,
		Subject:       c.Certificate().Subject.CommonName,
		Fingerprint:   c.Fingerprint(),
		NotAfter:      c.Certificate().NotAfter.UTC(),
		Env:           map[string]string{"SSL_CERT_FILE": bundle, "NODE_EXTRA_CA_CERTS": cert, "REQUESTS_CA_BUNDLE": bundle, "CURL_CA_BUNDLE": bundle},
		Keytool:       `keytool -importcert -noprompt -cacerts -storepass changeit -alias replay-ca -file '` + strings.ReplaceAll(cert, "'", `'\''`) + "'",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Describe (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(got.Subject, "replay CA") || len(got.Fingerprint) != 95 {
		t.Errorf("certificate facts: subject %q, fingerprint %q", got.Subject, got.Fingerprint)
	}
	if _, err := os.Stat(bundle); err != nil {
		t.Errorf("bundle not written: %v", err)
	}
	// Every variable TrustEnv names gets a file, and the JSON carries it.
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range TrustEnv() {
		if got.Env[v.Name] == "" || !bytes.Contains(b, []byte(`"`+v.Name+`":`)) {
			t.Errorf("%s missing: %s", v.Name, b)
		}
	}
}
