package analyzer

import (
	"math"
	"strconv"
	"strings"
)

// FingerprintWidth is the length above which explanations shorten a
// fingerprint (see ShortFingerprint).
const FingerprintWidth = 80

// ShortFingerprint shortens a fingerprint longer than width bytes: first the
// select list becomes "…" ("SELECT … FROM order_items WHERE order_id = ?"),
// then the tail is cut and marked with "…". Shorter fingerprints are returned
// unchanged.
func ShortFingerprint(fp string, width int) string {
	fp = strings.Join(strings.Fields(fp), " ")
	if len(fp) <= width {
		return fp
	}
	if strings.HasPrefix(strings.ToUpper(fp), "SELECT ") {
		if i := topLevelFrom(fp); i > len("SELECT") {
			fp = "SELECT …" + fp[i:]
		}
	}
	if len(fp) <= width {
		return fp
	}
	return shorten(fp, max(width-len("…"), 1))
}

// topLevelFrom returns the index of the first " FROM " outside
// parentheses (so not a subquery's), or -1.
func topLevelFrom(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ' ':
			if depth == 0 && len(s) >= i+6 && strings.EqualFold(s[i:i+6], " FROM ") {
				return i
			}
		}
	}
	return -1
}

// FormatMs formats milliseconds for a sentence: "0.42 ms", "4.1 ms",
// "54.3 ms", "1234 ms".
func FormatMs(v float64) string { return formatMsNumber(v) + " ms" }

func formatMsNumber(v float64) string {
	a := math.Abs(v)
	var s string
	switch {
	case a == 0:
		return "0"
	case a < 1:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	default:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return trimZeros(s)
}

// signedMs formats a change: "+50.2 ms", "−3.1 ms".
func signedMs(v float64) string {
	if v < 0 {
		return "−" + FormatMs(-v)
	}
	return "+" + FormatMs(v)
}

// FormatRatio formats a ratio: "×1.05", "×13.2"; within 1% of 1 with three
// decimals ("×0.996"), so that an interval bound never reads "×1.00".
func FormatRatio(r float64) string {
	switch {
	case r >= 10:
		return "×" + trimZeros(strconv.FormatFloat(r, 'f', 1, 64))
	case math.Abs(r-1) < 0.001:
		return "×" + strconv.FormatFloat(r, 'f', 4, 64)
	case math.Abs(r-1) < 0.01:
		return "×" + strconv.FormatFloat(r, 'f', 3, 64)
	}
	return "×" + strconv.FormatFloat(r, 'f', 2, 64)
}

// FormatCount formats a per-request figure: "50", "1.5", "0.33".
func FormatCount(v float64) string {
	if v >= 100 || v == math.Trunc(v) {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
}

// FormatPercent formats a percentage: "0%", "12%", "99.5%", "0.03%".
func FormatPercent(v float64) string {
	switch {
	case v == 0 || v == 100:
	case v < 0.1 || v > 99.9:
		return trimZeros(strconv.FormatFloat(v, 'f', 2, 64)) + "%"
	}
	return trimZeros(strconv.FormatFloat(v, 'f', 1, 64)) + "%"
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
