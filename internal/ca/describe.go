package ca

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/replaykit/replay/internal/shell"
)

// Info describes a CA for its user: where its files are, what it is, and
// how to make an app trust it. Its JSON is what `replay ca --format json`
// prints.
type Info struct {
	// SchemaVersion is the version of the JSON's schema
	// (docs/schema/ca.json), JSONSchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Dir, Cert, Key and Bundle are the paths of the CA directory, its
	// certificate, its private key and the bundle (system roots plus the CA).
	Dir    string `json:"dir"`
	Cert   string `json:"cert"`
	Key    string `json:"key"`
	Bundle string `json:"bundle"`
	// Created is true when the CA was made just now. Describe cannot tell,
	// so it leaves it false for the caller that made the CA to set.
	Created bool `json:"created"`
	// Subject is the certificate's common name.
	Subject string `json:"subject"`
	// Fingerprint is the SHA-256 of the certificate, as Fingerprint formats it.
	Fingerprint string `json:"fingerprint_sha256"`
	// NotAfter is when the certificate expires, in UTC.
	NotAfter time.Time `json:"not_after"`
	// Env maps each variable of TrustEnv to the file it should name.
	Env map[string]string `json:"env"`
	// Keytool is the command that adds the CA to a JVM's trust store.
	Keytool string `json:"keytool"`
}

// JSONSchemaVersion is the version of Info's JSON: adding a key keeps it;
// renaming or removing one, or changing its type, raises it.
const JSONSchemaVersion = 1

// TrustVar is an environment variable that makes a runtime trust the CA.
type TrustVar struct {
	// Name is the variable, e.g. "SSL_CERT_FILE".
	Name string
	// Covers says which runtimes read it.
	Covers string
	// Bundle is true when the variable takes the bundle, false when it
	// takes the CA certificate alone.
	Bundle bool
}

// TrustEnv returns the variables that make common runtimes trust the CA,
// in the order Info's writers print them.
func TrustEnv() []TrustVar {
	return []TrustVar{
		{"SSL_CERT_FILE", "Go, OpenSSL-based runtimes (Python ssl, Ruby, PHP), many CLIs", true},
		{"NODE_EXTRA_CA_CERTS", "Node.js (added to its built-in roots)", false},
		{"REQUESTS_CA_BUNDLE", "Python requests", true},
		{"CURL_CA_BUNDLE", "curl", true},
	}
}

// Describe returns what Info tells of c, writing its bundle if need be.
func Describe(c *CA) (*Info, error) {
	bundle, err := c.BundlePath()
	if err != nil {
		return nil, err
	}
	info := &Info{
		SchemaVersion: JSONSchemaVersion,
		Dir:           c.Dir(),
		Cert:          c.CertPath(),
		Key:           c.KeyPath(),
		Bundle:        bundle,
		Subject:       c.Certificate().Subject.CommonName,
		Fingerprint:   c.Fingerprint(),
		NotAfter:      c.Certificate().NotAfter.UTC(),
		Env:           map[string]string{},
		Keytool:       "keytool -importcert -noprompt -cacerts -storepass changeit -alias replay-ca -file " + shell.Quote(c.CertPath()),
	}
	for _, v := range TrustEnv() {
		info.Env[v.Name] = c.CertPath()
		if v.Bundle {
			info.Env[v.Name] = bundle
		}
	}
	return info, nil
}

// WriteJSON writes info as indented JSON, its schema_version
// JSONSchemaVersion.
func (info *Info) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	doc := *info
	doc.SchemaVersion = JSONSchemaVersion
	return enc.Encode(&doc)
}

// WriteEnv writes an export line per variable of TrustEnv, for a POSIX
// shell to eval.
func (info *Info) WriteEnv(w io.Writer) error {
	var b strings.Builder
	for _, v := range TrustEnv() {
		fmt.Fprintf(&b, "export %s=%s\n", v.Name, shell.Quote(info.Env[v.Name]))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText writes info for a person: the files and the certificate, then
// the lines that make an app trust the CA, each variable under a comment
// saying which runtimes read it, and the JVM's keytool command.
func (info *Info) WriteText(w io.Writer) error {
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
	for _, v := range TrustEnv() {
		fmt.Fprintf(&b, "# %s\nexport %s=%s\n", v.Covers, v.Name, shell.Quote(info.Env[v.Name]))
	}
	b.WriteString("# JVM (Java 9+; on Java 8 use -keystore \"$JAVA_HOME/jre/lib/security/cacerts\" instead of -cacerts)\n")
	b.WriteString(info.Keytool + "\n\n")
	b.WriteString("Then point the app's HTTP_PROXY and HTTPS_PROXY at replay record --outbound or replay mock.\n")
	_, err := io.WriteString(w, b.String())
	return err
}
