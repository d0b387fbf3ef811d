package redact

import (
	"reflect"
	"testing"
)

func TestParseConfig(t *testing.T) {
	for _, c := range []Config{{}, {Off: true}, {Headers: []string{"X-Key"}, Query: []string{"sig"}, Fields: []string{"ssn", "pin"}}} {
		got, err := ParseConfig(c.String())
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("ParseConfig(%q) = %+v, %v; want %+v", c.String(), got, err, c)
		}
	}
	for _, bad := range []string{"", "on", "default +colour:x", "default header:x", "default +field:"} {
		if _, err := ParseConfig(bad); err == nil {
			t.Errorf("ParseConfig(%q): no error", bad)
		}
	}
}
