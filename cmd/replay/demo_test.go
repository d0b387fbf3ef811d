package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"
	"github.com/replaykit/replay/internal/syncbuf"
)

// TestDemo runs `replay demo` as a user does and checks that it ends with
// the report naming the N+1 in GET /orders, the other endpoints not
// regressed, and everything it wrote in its output directory.
func TestDemo(t *testing.T) {
	bin := buildReplay(t)
	out := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command(bin, "demo", "--out", out, "--duration", "3s", "--rounds", "4")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("replay demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	text := stdout.String()
	for _, want := range []string{
		"recorded 29 exchanges", // 1 + 6×4 inbound requests and 4 catalog calls
		"outbound   catalog.demo.test:443  GET /products",
		"N+1: `SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = ?` runs 50 times per request",
		"The demo found the N+1 in GET /orders",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	if m := regexp.MustCompile(`PostgreSQL +\S+ \(data in (\S+),`).FindStringSubmatch(text); m == nil {
		t.Error("demo output does not say where PostgreSQL ran")
	} else if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("the demo's PostgreSQL directory %s is still there", m[1])
	}

	raw, err := os.ReadFile(filepath.Join(out, "compare", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc compareJSON
	schematest.Check(t, "comparison", raw)
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Verdict != "regression" {
		t.Errorf("verdict %q, want regression", doc.Verdict)
	}
	for _, e := range doc.Endpoints {
		switch {
		case e.Endpoint == "GET /orders":
			if e.Verdict != "regression" || e.BaseStats.SQLPerRequest != 1 || e.CandStats.SQLPerRequest != 51 {
				t.Errorf("GET /orders: %s, SQL %v → %v; want regression, 1 → 51", e.Verdict, e.BaseStats.SQLPerRequest, e.CandStats.SQLPerRequest)
			}
		case e.Verdict == "regression":
			t.Errorf("%s regressed: %s", e.Endpoint, e.Explanation)
		}
	}
	for _, f := range []string{"demo.snap", "compare/baseline.run", "compare/candidate.run", "compare/report.md", "compare/report.html", "compare/report.xml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("demo did not write %s: %v", f, err)
		}
	}
	// The Ran line names the builds as a user types them, not by the
	// runner's path to the binary.
	md, _ := os.ReadFile(filepath.Join(out, "compare", "report.md"))
	if !strings.Contains(string(md), "baseline `APP_SLOW=0 replay demo orders` vs candidate `APP_SLOW=1 replay demo orders`") || strings.Contains(string(md), bin) {
		t.Errorf("the Ran line does not name the builds `APP_SLOW=0 replay demo orders`, `APP_SLOW=1 replay demo orders`:\n%s", md)
	}
}

// TestDemoInterrupted: `replay demo` interrupted in its comparison keeps the
// directory it made, and the run files its error names are there.
func TestDemoInterrupted(t *testing.T) {
	bin := buildReplay(t)
	out := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command(bin, "demo", "--out", out, "--duration", "60s", "--rounds", "1")
	var stdout, stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	run := filepath.Join(out, "compare", "baseline.run")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(run); err == nil && strings.Contains(stdout.String(), "==> Comparing") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("demo ended before its comparison: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no comparison after 2 minutes\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}
	time.Sleep(2 * time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("interrupted demo exited 0\nstderr:\n%s", stderr.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("demo still running a minute after SIGINT")
	}
	msg := stderr.String()
	if !strings.Contains(msg, "of the requests completed so far") || !strings.Contains(msg, "are in "+out) {
		t.Errorf("stderr does not say where the run files are:\n%s", msg)
	}
	for _, f := range []string{"demo.snap", "compare/baseline.run", "compare/candidate.run"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("interrupted demo left no %s: %v", f, err)
		}
	}
}
