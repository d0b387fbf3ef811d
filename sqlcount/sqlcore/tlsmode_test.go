package sqlcore

import (
	"crypto/x509"
	"testing"
)

func TestUpstreamTLSConfig(t *testing.T) {
	for _, mode := range []string{"", TLSDisable} {
		if c, err := UpstreamTLSConfig(mode, nil); c != nil || err != nil {
			t.Errorf("UpstreamTLSConfig(%q) = %v, %v; want nil, nil", mode, c, err)
		}
	}
	if c, err := UpstreamTLSConfig(TLSRequire, nil); err != nil || c == nil || !c.InsecureSkipVerify {
		t.Errorf("require = %+v, %v; want encryption without verification", c, err)
	}
	roots := x509.NewCertPool()
	if c, err := UpstreamTLSConfig(TLSVerifyFull, roots); err != nil || c == nil || c.InsecureSkipVerify || c.RootCAs != roots {
		t.Errorf("verify-full = %+v, %v; want verification against the roots given", c, err)
	}
	if _, err := UpstreamTLSConfig("prefer", nil); err == nil {
		t.Error("an unknown mode gave no error")
	}
}
