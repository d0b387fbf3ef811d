package replayer

import "strings"

// Ended says how the build's command ended, e.g. "exited with status 2";
// "" while it runs. Ask before Stop, which ends
// it too.
func (p *Process) Ended() string {
	select {
	case <-p.exited:
		return exitText(p.err)
	default:
		return ""
	}
}

// LastLines returns the last n non-empty lines of the build's output,
// oldest first.
func (p *Process) LastLines(n int) []string {
	var out []string
	lines := strings.Split(p.tail.String(), "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimRight(lines[i], " \t\r"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
