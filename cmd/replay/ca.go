package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/internal/ca"
)

type caOptions struct {
	dir    string
	format string
	stdout io.Writer
}

func newCmdCA(s streams) *cobra.Command {
	opts := &caOptions{stdout: s.out}
	cmd := &cobra.Command{
		Use:   "ca [--ca-dir DIR] [--format text|json|env]",
		Short: "Show replay's CA and how to make an app trust it",
		Long: `ca creates replay's certificate authority on first use and prints where its
certificate is and the lines that make an app trust it.

replay record --outbound and replay mock intercept the app's HTTPS calls with
certificates signed by this CA. An app trusts them once its TLS stack trusts
the CA: SSL_CERT_FILE and the variables below point at a bundle of the
system's roots plus replay's CA, so the app still reaches real hosts.

The CA is an ECDSA P-256 key valid for ten years, kept in DIR/ca.pem and
DIR/ca-key.pem (readable by its owner only; a key with looser permissions
is refused).`,
		Example: `  replay ca
  eval "$(replay ca --format env)"     # trust it in this shell
  replay ca --ca-dir ./ca --format json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("ca: takes no arguments, got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return caRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	addCADirFlag(f, &opts.dir)
	f.StringVar(&opts.format, "format", "text", "output `format`: text, json, or env (just the export lines)")
	return cmd
}

// caInfo is what `replay ca --format json` prints.
type caInfo struct {
	Dir         string            `json:"dir"`
	Cert        string            `json:"cert"`
	Key         string            `json:"key"`
	Bundle      string            `json:"bundle"`
	Created     bool              `json:"created"`
	Subject     string            `json:"subject"`
	Fingerprint string            `json:"fingerprint_sha256"`
	NotAfter    time.Time         `json:"not_after"`
	Env         map[string]string `json:"env"`
	Keytool     string            `json:"keytool"`
}

// caEnv lists the variables that make common runtimes trust the CA, in the
// order printed, with what each one covers and whether it takes the bundle
// (true) or the CA certificate alone.
var caEnv = []struct {
	name, covers string
	bundle       bool
}{
	{"SSL_CERT_FILE", "Go, OpenSSL-based runtimes (Python ssl, Ruby, PHP), many CLIs", true},
	{"NODE_EXTRA_CA_CERTS", "Node.js (added to its built-in roots)", false},
	{"REQUESTS_CA_BUNDLE", "Python requests", true},
	{"CURL_CA_BUNDLE", "curl", true},
}

func caRun(ctx context.Context, opts *caOptions) error {
	if opts.format != "text" && opts.format != "json" && opts.format != "env" {
		return usagef("ca: --format %q: want text, json or env", opts.format)
	}
	dir := opts.dir
	if dir == "" {
		d, err := ca.DefaultDir()
		if err != nil {
			return fmt.Errorf("ca: %w", err)
		}
		dir = d
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // the printed lines must work from any directory
	}
	_, statErr := os.Stat(filepath.Join(dir, ca.CertFile))
	c, err := ca.LoadOrCreate(dir)
	if err != nil {
		return fmt.Errorf("ca: %w", err)
	}
	bundle, err := c.BundlePath()
	if err != nil {
		return fmt.Errorf("ca: %w", err)
	}
	info := caInfo{
		Dir:         c.Dir(),
		Cert:        c.CertPath(),
		Key:         c.KeyPath(),
		Bundle:      bundle,
		Created:     errors.Is(statErr, fs.ErrNotExist),
		Subject:     c.Certificate().Subject.CommonName,
		Fingerprint: c.Fingerprint(),
		NotAfter:    c.Certificate().NotAfter.UTC(),
		Env:         map[string]string{},
		Keytool:     keytoolCommand(c.CertPath()),
	}
	for _, v := range caEnv {
		info.Env[v.name] = c.CertPath()
		if v.bundle {
			info.Env[v.name] = bundle
		}
	}
	switch opts.format {
	case "json":
		enc := json.NewEncoder(opts.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	case "env":
		for _, v := range caEnv {
			fmt.Fprintf(opts.stdout, "export %s=%s\n", v.name, shellQuote(info.Env[v.name]))
		}
		return nil
	}
	return writeCAText(opts.stdout, &info)
}

func keytoolCommand(cert string) string {
	return "keytool -importcert -noprompt -cacerts -storepass changeit -alias replay-ca -file " + shellQuote(cert)
}

func writeCAText(w io.Writer, info *caInfo) error {
	var b strings.Builder
	if info.Created {
		fmt.Fprintf(&b, "Created replay's CA in %s\n\n", info.Dir)
	}
	fmt.Fprintf(&b, "CA certificate  %s\n", info.Cert)
	fmt.Fprintf(&b, "private key     %s (readable by its owner only)\n", info.Key)
	fmt.Fprintf(&b, "bundle          %s (system roots + replay's CA)\n", info.Bundle)
	fmt.Fprintf(&b, "subject         %s, valid until %s\n", info.Subject, info.NotAfter.Format(time.DateOnly))
	fmt.Fprintf(&b, "SHA-256         %s\n\n", info.Fingerprint)
	b.WriteString("To make an app trust it, add these lines to its environment:\n\n")
	for _, v := range caEnv {
		fmt.Fprintf(&b, "# %s\nexport %s=%s\n", v.covers, v.name, shellQuote(info.Env[v.name]))
	}
	b.WriteString("# JVM (Java 9+; on Java 8 use -keystore \"$JAVA_HOME/jre/lib/security/cacerts\" instead of -cacerts)\n")
	b.WriteString(info.Keytool + "\n\n")
	b.WriteString("Then point the app's HTTP_PROXY and HTTPS_PROXY at replay record --outbound or replay mock.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%,=", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
