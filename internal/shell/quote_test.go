package shell

import (
	"os/exec"
	"testing"
)

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/home/u/.config/replay/ca/ca.pem", "/home/u/.config/replay/ca/ca.pem"},
		{"a-b_c+d:e@f%g,h=i", "a-b_c+d:e@f%g,h=i"},
		{"/tmp/my ca/ca.pem", "'/tmp/my ca/ca.pem'"},
		{"/tmp/it's/ca.pem", `'/tmp/it'\''s/ca.pem'`},
		{"$HOME", "'$HOME'"},
		{"naïve", "'naïve'"},
		{"", "''"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestQuoteShell has a real shell read the quoted words back.
func TestQuoteShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, s := range []string{"plain", "two words", "it's", `"double" \ back`, "$HOME `x` *", "new\nline", ""} {
		out, err := exec.Command(sh, "-c", "printf '%s' "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("sh for %q: %v", s, err)
		}
		if string(out) != s {
			t.Errorf("sh read %q back as %q", s, out)
		}
	}
}
