package grpcwire

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ErrBadTimeout is returned for a grpc-timeout that is not 1 to 8 digits
// and a unit (H, M, S, m, u, n).
var ErrBadTimeout = errors.New("bad grpc-timeout")

// timeoutUnits are grpc-timeout's units, largest first.
var timeoutUnits = []struct {
	c byte
	d time.Duration
}{{'H', time.Hour}, {'M', time.Minute}, {'S', time.Second}, {'m', time.Millisecond}, {'u', time.Microsecond}, {'n', time.Nanosecond}}

// ParseTimeout reads a grpc-timeout header value ("100m", "5S"): the
// deadline a client gave its call.
func ParseTimeout(s string) (time.Duration, error) {
	if len(s) < 2 || len(s) > 9 {
		return 0, fmt.Errorf("%w %q", ErrBadTimeout, s)
	}
	digits, unit := s[:len(s)-1], s[len(s)-1]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, fmt.Errorf("%w %q", ErrBadTimeout, s)
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w %q", ErrBadTimeout, s)
	}
	for _, u := range timeoutUnits {
		if u.c == unit {
			if n > math.MaxInt64/int64(u.d) {
				return math.MaxInt64, nil
			}
			return time.Duration(n) * u.d, nil
		}
	}
	return 0, fmt.Errorf("%w %q: unknown unit %q", ErrBadTimeout, s, unit)
}

// FormatTimeout writes d as a grpc-timeout value: the exact count of the
// largest unit that fits in 8 digits, rounded up where no unit is exact
// (a deadline is never made shorter). d <= 0 gives "0n".
func FormatTimeout(d time.Duration) string {
	if d <= 0 {
		return "0n"
	}
	const maxDigits = 99999999
	for i := len(timeoutUnits) - 1; i >= 0; i-- { // smallest unit first
		u := timeoutUnits[i]
		n := (d + u.d - 1) / u.d
		if int64(n) <= maxDigits {
			// Prefer an exact larger unit ("5S", not "5000m").
			for j := 0; j < i; j++ {
				if big := timeoutUnits[j]; d%big.d == 0 && int64(d/big.d) <= maxDigits {
					return strconv.FormatInt(int64(d/big.d), 10) + string(big.c)
				}
			}
			return strconv.FormatInt(int64(n), 10) + string(u.c)
		}
	}
	return strconv.FormatInt(maxDigits, 10) + "H"
}
