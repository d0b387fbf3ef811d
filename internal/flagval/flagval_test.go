package flagval

import "testing"

func TestAutoInt(t *testing.T) {
	v := -1
	a := AutoInt{&v}
	if a.String() != "" {
		t.Errorf("unset: %q, want no default shown", a.String())
	}
	if err := a.Set("7"); err != nil || v != 7 || a.String() != "7" {
		t.Errorf("Set 7: %v, %d, %q", err, v, a.String())
	}
	for _, bad := range []string{"-1", "x", ""} {
		if err := a.Set(bad); err == nil {
			t.Errorf("Set %q: no error", bad)
		}
	}
}
