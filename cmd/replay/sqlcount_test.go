package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/internal/pgtest"
)

func TestSQLCountUsage(t *testing.T) {
	for _, args := range [][]string{
		{"sqlcount", "--upstream", "127.0.0.1:5432"},
		{"sqlcount", "--listen", "127.0.0.1:0"},
		{"sqlcount", "--listen", "127.0.0.1:0", "--upstream", "nohostport"},
		{"sqlcount", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:5432", "extra"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, streams{in: strings.NewReader(""), out: &out, err: &errOut}); code != exitUsage {
			t.Errorf("replay %s: exit %d, want %d (stderr %q)", strings.Join(args, " "), code, exitUsage, errOut.String())
		}
	}
}

func TestSQLCountRun(t *testing.T) {
	c := pgtest.New(t)
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "counts.json")
	var out, errOut bytes.Buffer
	addrs := make(chan net.Addr, 1)
	opts := &sqlcountOptions{
		listen: "127.0.0.1:0", upstream: c.Addr(), jsonPath: jsonPath,
		out: &out, errOut: &errOut, onListen: func(a net.Addr) { addrs <- a },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sqlcountRun(ctx, opts) }()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("sqlcount ended before listening: %v", err)
	}

	conn, err := pgx.Connect(ctx, "postgres://"+c.User+"@"+addr.String()+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := conn.Exec(ctx, "SELECT $1::int", i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT 'a'; SELECT 'b'"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	cancel() // as SIGINT does
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sqlcount did not stop")
	}

	text := out.String()
	for _, want := range []string{"listening on " + addr.String(), "5 statements, 2 fingerprints", "FINGERPRINT", "SELECT ? :: int", "SELECT ?"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "SELECT ? :: int") > strings.Index(text, "SELECT ?\n") {
		t.Errorf("table not sorted by count:\n%s", text)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Statements   int64 `json:"statements"`
		Fingerprints []struct {
			Fingerprint string   `json:"fingerprint"`
			Count       int64    `json:"count"`
			TotalMS     *float64 `json:"total_ms"`
			MeanMS      *float64 `json:"mean_ms"`
		} `json:"fingerprints"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got.Statements != 5 || len(got.Fingerprints) != 2 ||
		got.Fingerprints[0].Fingerprint != "SELECT ? :: int" || got.Fingerprints[0].Count != 3 ||
		got.Fingerprints[1].Fingerprint != "SELECT ?" || got.Fingerprints[1].Count != 2 ||
		got.Fingerprints[0].TotalMS == nil || got.Fingerprints[0].MeanMS == nil {
		t.Errorf("json file:\n%s", b)
	}
}
