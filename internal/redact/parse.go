package redact

import (
	"fmt"
	"strings"
)

// ParseConfig reads back what Config.String wrote ("off", or "default"
// followed by " +header:NAME", " +query:NAME", " +field:NAME"), e.g. a
// snapshot's Redaction, so that what replay keeps of a replay of it is
// redacted alike.
func ParseConfig(s string) (Config, error) {
	if s == "off" {
		return Config{Off: true}, nil
	}
	words := strings.Fields(s)
	if len(words) == 0 || words[0] != "default" {
		return Config{}, fmt.Errorf("redaction %q: want off, or default and +KIND:NAME entries", s)
	}
	var c Config
	for _, w := range words[1:] {
		kind, name, ok := strings.Cut(strings.TrimPrefix(w, "+"), ":")
		switch {
		case !ok || name == "" || !strings.HasPrefix(w, "+"):
			return Config{}, fmt.Errorf("redaction %q: entry %q: want +KIND:NAME", s, w)
		case kind == "header":
			c.Headers = append(c.Headers, name)
		case kind == "query":
			c.Query = append(c.Query, name)
		case kind == "field":
			c.Fields = append(c.Fields, name)
		default:
			return Config{}, fmt.Errorf("redaction %q: entry %q: kind %q is not header, query or field", s, w, kind)
		}
	}
	return c, nil
}
