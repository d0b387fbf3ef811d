package redact

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// Config says what a Redactor redacts beyond the one list. The zero value
// redacts the default names (SecretField) and URL passwords.
type Config struct {
	// Headers, Query and Fields name more headers, query parameters and
	// body fields (JSON members, form fields) to redact; a name matches
	// whole, case and punctuation aside ("api-key" matches "API_KEY").
	Headers, Query, Fields []string
	// Off records everything as it is.
	Off bool
}

// AddFlags registers --redact-header, --redact-query, --redact-field and
// --no-redact on f.
func (c *Config) AddFlags(f *pflag.FlagSet) {
	f.StringArrayVar(&c.Headers, "redact-header", nil, "also redact the values of header `NAME` (repeatable; headers whose names look secret, e.g. Authorization, Cookie, X-Api-Key, always are)")
	f.StringArrayVar(&c.Query, "redact-query", nil, "also redact the values of query parameter `NAME` (repeatable; names that look secret, e.g. token, api_key, always are)")
	f.StringArrayVar(&c.Fields, "redact-field", nil, "also redact JSON and form body field `NAME` (repeatable; names that look secret, e.g. password, client_secret, always are)")
	f.BoolVar(&c.Off, "no-redact", false, "record secrets as they are (headers, query parameters, body fields, URL passwords); the snapshot then holds them")
}

// Redactor returns the Redactor of c (New).
func (c *Config) Redactor() *Redactor { return New(*c) }

// Check checks the names (cmd names the command in the error) and writes
// one warning line to warn when c turns redaction off.
func (c *Config) Check(cmd string, warn io.Writer) error {
	for _, g := range []struct {
		flag, what string
		names      []string
	}{{"--redact-header", "header name, e.g. X-Api-Key", c.Headers}, {"--redact-query", "query parameter name, e.g. key", c.Query},
		{"--redact-field", "field name, e.g. ssn", c.Fields}} {
		for _, n := range g.names {
			if normalise(n) == "" || strings.ContainsAny(n, ": \t\r\n") {
				return fmt.Errorf("%s: %s %q: want a %s", cmd, g.flag, n, g.what)
			}
			if c.Off {
				return fmt.Errorf("%s: %s cannot be combined with --no-redact", cmd, g.flag)
			}
		}
	}
	if c.Off {
		fmt.Fprintln(warn, "warning: --no-redact: secrets (Authorization, cookies, tokens, passwords) are written to the snapshot as they are")
	}
	return nil
}

// String describes c for a snapshot's records and inspect: "off", or
// "default" followed by the extra names.
func (c *Config) String() string {
	if c.Off {
		return "off"
	}
	s := "default"
	for _, g := range []struct {
		kind  string
		names []string
	}{{"header", c.Headers}, {"query", c.Query}, {"field", c.Fields}} {
		for _, n := range g.names {
			s += " +" + g.kind + ":" + n
		}
	}
	return s
}
