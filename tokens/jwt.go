package tokens

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// JWTExpiry returns the exp claim of token when it is a JWT (three
// base64url parts, the middle one a JSON object with a numeric exp); ok is
// false otherwise. The signature is not checked: the target does that.
func JWTExpiry(token string) (exp time.Time, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(raw, &claims) != nil || claims.Exp == nil || *claims.Exp <= 0 {
		return time.Time{}, false
	}
	sec := int64(*claims.Exp)
	return time.Unix(sec, int64((*claims.Exp-float64(sec))*1e9)), true
}
