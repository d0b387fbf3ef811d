package recorder

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTmpHang(t *testing.T) {
	ents, _ := os.ReadDir("/tmp/fz")
	for _, e := range ents {
		raw, _ := os.ReadFile("/tmp/fz/" + e.Name())
		lines := strings.SplitN(string(raw), "\n", 2)
		lit := strings.TrimSuffix(strings.TrimSpace(lines[1]), ")")
		lit = strings.TrimPrefix(lit, "[]byte(")
		s, err := strconv.Unquote(lit)
		if err != nil {
			t.Fatal(err)
		}
		for _, ports := range [][]int{nil, {8080}} {
			start := time.Now()
			sink := &pcapSink{}
			st, err := ImportPcap(context.Background(), bytes.NewReader([]byte(s)), sink, PcapConfig{Ports: ports, BodyLimit: 64})
			fmt.Println(e.Name(), ports, st.Exchanges, err, time.Since(start))
		}
	}
}
