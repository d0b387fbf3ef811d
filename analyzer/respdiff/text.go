package respdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// lineOp is one step of a line diff: a line both have, or one of one side.
type lineOp struct {
	op     byte // '=', '-' (baseline only) or '+' (candidate only)
	ai, bi int  // the line's index in a ('=' and '-') and b ('=' and '+')
}

// maxLCSCells bounds the table of the longest-common-subsequence diff;
// longer texts are compared line by line at the same index.
const maxLCSCells = 1 << 20

// diffLines aligns the lines of a and b, keeping as many in common as it
// can (a longest common subsequence after the common head and tail).
func diffLines(a, b []string) []lineOp {
	var ops []lineOp
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		ops = append(ops, lineOp{'=', head, head})
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	ma, mb := a[head:len(a)-tail], b[head:len(b)-tail]
	if (len(ma)+1)*(len(mb)+1) > maxLCSCells {
		ops = append(ops, byIndex(ma, mb, head)...)
	} else {
		ops = append(ops, lcs(ma, mb, head)...)
	}
	for i := range tail {
		ops = append(ops, lineOp{'=', len(a) - tail + i, len(b) - tail + i})
	}
	return ops
}

// byIndex pairs the lines of a and b at the same index (off is where they
// start in their texts).
func byIndex(a, b []string, off int) []lineOp {
	var ops []lineOp
	for i := range max(len(a), len(b)) {
		switch {
		case i < len(a) && i < len(b) && a[i] == b[i]:
			ops = append(ops, lineOp{'=', off + i, off + i})
		default:
			if i < len(a) {
				ops = append(ops, lineOp{'-', off + i, off + i})
			}
			if i < len(b) {
				ops = append(ops, lineOp{'+', off + i, off + i})
			}
		}
	}
	return ops
}

// lcs diffs a and b by their longest common subsequence of lines.
func lcs(a, b []string, off int) []lineOp {
	n, m := len(a), len(b)
	t := make([]int32, (n+1)*(m+1))
	at := func(i, j int) int32 { return t[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			v := max(at(i+1, j), at(i, j+1))
			if a[i] == b[j] {
				v = at(i+1, j+1) + 1
			}
			t[i*(m+1)+j] = v
		}
	}
	var ops []lineOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, lineOp{'=', off + i, off + j})
			i, j = i+1, j+1
		case i < n && (j == m || at(i+1, j) >= at(i, j+1)):
			ops = append(ops, lineOp{'-', off + i, off + j})
			i++
		default:
			ops = append(ops, lineOp{'+', off + i, off + j})
			j++
		}
	}
	return ops
}

// splitLines splits a text body into lines, without their endings.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// textDiffs are the differences of two text bodies, line by line: a line
// changed (a run of removed lines facing a run of added ones, pairwise),
// dropped or added. Paths number lines from 1, the baseline's for changed
// and dropped lines, the candidate's for added ones.
func textDiffs(a, b string) []Diff {
	la, lb := splitLines(a), splitLines(b)
	ops := diffLines(la, lb)
	var out []Diff
	for i := 0; i < len(ops); {
		if ops[i].op == '=' {
			i++
			continue
		}
		var del, ins []lineOp
		for ; i < len(ops) && ops[i].op != '='; i++ {
			if ops[i].op == '-' {
				del = append(del, ops[i])
			} else {
				ins = append(ins, ops[i])
			}
		}
		for k := range max(len(del), len(ins)) {
			switch {
			case k < len(del) && k < len(ins):
				out = append(out, Diff{Path: lineRef(del[k].ai), Kind: KindChanged,
					Baseline: lineValue(la[del[k].ai]), Candidate: lineValue(lb[ins[k].bi])})
			case k < len(del):
				out = append(out, Diff{Path: lineRef(del[k].ai), Kind: KindDropped, Baseline: lineValue(la[del[k].ai]), Candidate: Absent})
			default:
				out = append(out, Diff{Path: lineRef(ins[k].bi), Kind: KindAdded, Baseline: Absent, Candidate: lineValue(lb[ins[k].bi])})
			}
		}
	}
	return out
}

func lineRef(i int) string     { return "line:" + strconv.Itoa(i+1) }
func lineValue(s string) Value { return Value{Type: "line", Text: quote(s)} }

// Example diff limits: lines of context around a change, and lines in all.
const (
	exampleContext  = 2
	maxExampleLines = 30
)

// exampleDiff renders the bodies of a differing pair as a short unified
// diff ("-" baseline, "+" candidate, "  " both), JSON pretty-printed with
// its keys sorted; "" for bodies it cannot show (binary, or equal once
// printed).
func exampleDiff(a, b Answer, env *pairEnv) string {
	ta, oka := printable(a, env.hide)
	tb, okb := printable(b, env.hide)
	if !oka || !okb {
		return ""
	}
	la, lb := splitLines(norm(string(ta), env.hostA)), splitLines(norm(string(tb), env.hostB))
	ops := diffLines(la, lb)
	keep := make([]bool, len(ops))
	changed := false
	for i, o := range ops {
		if o.op != '=' {
			changed = true
			for j := max(0, i-exampleContext); j <= min(len(ops)-1, i+exampleContext); j++ {
				keep[j] = true
			}
		}
	}
	if !changed {
		return ""
	}
	var sb strings.Builder
	lines, gap := 0, false
	for i, o := range ops {
		if !keep[i] {
			gap = true
			continue
		}
		if lines == maxExampleLines {
			sb.WriteString("…\n")
			break
		}
		if gap && sb.Len() > 0 {
			sb.WriteString("…\n")
		}
		gap = false
		switch o.op {
		case '=':
			sb.WriteString("  " + la[o.ai] + "\n")
		case '-':
			sb.WriteString("- " + la[o.ai] + "\n")
		default:
			sb.WriteString("+ " + lb[o.bi] + "\n")
		}
		lines++
	}
	return sb.String()
}

// printable is the text of a body an example diff shows: JSON indented
// with its keys sorted and the values hide names "(ignored)", or the text
// itself.
func printable(a Answer, hide func([]seg) bool) ([]byte, bool) {
	if !a.Truncated && looksJSON(a.Header.Get("Content-Type"), a.Body) {
		if v, err := a.json(); err == nil {
			if b, err := json.MarshalIndent(masked(v, nil, hide), "", "  "); err == nil {
				return b, true
			}
		}
	}
	if isText(a.Body) {
		return a.Body, true
	}
	return nil, false
}

// masked is v with the values at the paths hide names replaced by
// "(ignored)".
func masked(v any, segs []seg, hide func([]seg) bool) any {
	if hide == nil {
		return v
	}
	if len(segs) > 0 && hide(segs) {
		return "(ignored)"
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = masked(e, append(segs[:len(segs):len(segs)], seg{kind: segKey, key: k}), hide)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = masked(e, append(segs[:len(segs):len(segs)], seg{kind: segIndex, index: i}), hide)
		}
		return out
	}
	return v
}

// isText reports whether b is UTF-8 text without NUL bytes.
func isText(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && validUTF8(b)
}

// bodyValue describes a body compared whole.
func bodyValue(a Answer, what string) Value {
	size := a.BodySize
	if size < int64(len(a.Body)) {
		size = int64(len(a.Body))
	}
	text := fmt.Sprintf("%d bytes", size)
	if a.Truncated {
		text = fmt.Sprintf("%d bytes, %d kept", size, len(a.Body))
	}
	return Value{Type: "bytes", Text: fmt.Sprintf("%s (%s, hash %016x)", text, what, fnv64(a.Body))}
}
