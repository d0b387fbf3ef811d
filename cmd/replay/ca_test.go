package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/replaykit/replay/internal/ca"
)

// runCA runs `replay args...` and returns the exit code, stdout and stderr.
func runCA(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, streams{in: strings.NewReader(""), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

func TestCAText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	code, out, stderr := runCA(t, "ca", "--ca-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cert, bundle := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "bundle.pem")
	for _, line := range []string{
		"Created replay's CA in " + dir,
		"CA certificate  " + cert,
		"export SSL_CERT_FILE=" + bundle,
		"export NODE_EXTRA_CA_CERTS=" + cert,
		"export REQUESTS_CA_BUNDLE=" + bundle,
		"export CURL_CA_BUNDLE=" + bundle,
		"keytool -importcert -noprompt -cacerts -storepass changeit -alias replay-ca -file " + cert,
	} {
		if !containsLine(out, line) {
			t.Errorf("output lacks the line %q:\n%s", line, out)
		}
	}
	for _, f := range []string{cert, bundle} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "ca-key.pem"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v", err, fi.Mode())
	}

	// The second run finds the same CA and creates nothing.
	code, again, _ := runCA(t, "ca", "--ca-dir", dir)
	if code != 0 || strings.Contains(again, "Created") {
		t.Errorf("second run: exit %d, output:\n%s", code, again)
	}
	if fp := fingerprintLine(out); fp == "" || fp != fingerprintLine(again) {
		t.Errorf("fingerprint changed between runs: %q, %q", fp, fingerprintLine(again))
	}
}

func containsLine(out, line string) bool {
	for l := range strings.Lines(out) {
		if strings.TrimRight(l, "\n") == line {
			return true
		}
	}
	return false
}

func fingerprintLine(out string) string {
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "SHA-256") {
			return l
		}
	}
	return ""
}

func TestCAJSON(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCA(t, "ca", "--ca-dir", dir, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got ca.Info
	schematest.Check(t, "ca", []byte(out))
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	cert, bundle := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "bundle.pem")
	if got.Cert != cert || got.Bundle != bundle || got.Key != filepath.Join(dir, "ca-key.pem") || !got.Created {
		t.Errorf("paths: %+v", got)
	}
	wantEnv := map[string]string{"SSL_CERT_FILE": bundle, "NODE_EXTRA_CA_CERTS": cert, "REQUESTS_CA_BUNDLE": bundle, "CURL_CA_BUNDLE": bundle}
	for k, v := range wantEnv {
		if got.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, got.Env[k], v)
		}
	}
	if len(got.Fingerprint) != 95 || !strings.HasPrefix(got.Subject, "replay CA") || got.NotAfter.IsZero() {
		t.Errorf("certificate facts: %+v", got)
	}
	if !strings.Contains(got.Keytool, "-file "+cert) {
		t.Errorf("keytool %q", got.Keytool)
	}
}

// TestCAEnvFormat evaluates the env lines in a shell, for a directory whose
// name needs quoting.
func TestCAEnvFormat(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := filepath.Join(t.TempDir(), "it's a dir")
	code, out, stderr := runCA(t, "ca", "--ca-dir", dir, "--format", "env")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(out, "\n"); n != 4 {
		t.Errorf("%d lines, want 4:\n%s", n, out)
	}
	script := out + `printf '%s\n' "$SSL_CERT_FILE" "$NODE_EXTRA_CA_CERTS" "$REQUESTS_CA_BUNDLE" "$CURL_CA_BUNDLE"`
	got, err := exec.Command(sh, "-c", script).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	cert, bundle := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "bundle.pem")
	if want := strings.Join([]string{bundle, cert, bundle, bundle}, "\n") + "\n"; string(got) != want {
		t.Errorf("the shell read:\n%s\nwant:\n%s", got, want)
	}
}

func TestCADefaultDir(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	code, out, stderr := runCA(t, "ca", "--format", "env")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "export SSL_CERT_FILE=" + filepath.Join(cfg, "replay", "ca", "bundle.pem"); !containsLine(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

func TestCAErrors(t *testing.T) {
	loose := t.TempDir()
	if code, _, stderr := runCA(t, "ca", "--ca-dir", loose); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Chmod(filepath.Join(loose, "ca-key.pem"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad format", []string{"ca", "--format", "yaml"}, 2, `--format "yaml"`},
		{"two formats", []string{"ca", "--format", "env,json"}, 2, "ca: --format env,json: give one format"},
		{"extra argument", []string{"ca", "extra"}, 2, "extra"},
		{"unknown flag", []string{"ca", "--nope"}, 2, "--nope"},
		{"loose key permissions", []string{"ca", "--ca-dir", loose}, 1, "chmod 600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runCA(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line mentioning %q", stderr, tt.want)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/home/u/.config/replay/ca/ca.pem", "/home/u/.config/replay/ca/ca.pem"},
		{"/tmp/my ca/ca.pem", "'/tmp/my ca/ca.pem'"},
		{"/tmp/it's/ca.pem", `'/tmp/it'\''s/ca.pem'`},
		{"", "''"},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
