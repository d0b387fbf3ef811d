package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/replaykit/replay/internal/grpctest"
	"github.com/replaykit/replay/session"
)

// `replay compare` of a recording of grpc-go's interop client: two copies
// of the interop server differ in nothing (their answers, decoded from
// protobuf, compared as JSON); a build whose UnaryCall is 30 ms slower is
// a regression of that method alone.
func TestCompareGRPC(t *testing.T) {
	snap, _, _ := recordInteropSnapshot(t)
	base := grpctest.Start(t, nil)
	compare := func(t *testing.T, cand *grpctest.Server) (int, responsesJSON, string) {
		return compareJSONOf(t, "compare", "--snapshot", snap, "--baseline-url", "http://"+base.Addr,
			"--candidate-url", "http://"+cand.Addr, "--vus", "4", "--duration", "2s", "--warmup", "200ms",
			"--min-change", "50%,10ms", "--out", filepath.Join(t.TempDir(), "cmp"))
	}
	t.Run("copy", func(t *testing.T) {
		code, doc, stderr := compare(t, grpctest.Start(t, nil))
		if code != exitOK && !couldNotTell(t, code, stderr) || doc.Verdict == "regression" {
			t.Errorf("exit %d, verdict %s; stderr %s", code, doc.Verdict, stderr)
		}
		if d := doc.differing(); len(d) > 0 {
			t.Errorf("differing answers between two copies: %v", d)
			for _, e := range doc.Endpoints {
				if e.Responses != nil {
					for _, g := range e.Responses.Differences {
						t.Logf("%s %s: %q vs %q", e.Endpoint, g.Path, g.Baseline, g.Candidate)
					}
				}
			}
		}
		if doc.compared() == 0 {
			t.Errorf("no answers compared")
		}
	})
	t.Run("another answer", func(t *testing.T) {
		other := grpctest.StartWith(t, grpctest.Options{Alter: func(method string, resp any) {
			if r, ok := resp.(*testpb.SimpleResponse); ok {
				r.Hostname = "candidate"
			}
		}})
		code, doc, stderr := compare(t, other)
		if code != exitRegression {
			t.Errorf("exit %d, want %d (regression); stderr %s", code, exitRegression, stderr)
		}
		// SimpleResponse.hostname is field 6; the answers beyond the
		// sample differ by hash.
		d := doc.differing()
		if got := d["gRPC grpc.testing.TestService/UnaryCall"]; !slices.Contains(got, "$.messages[*].6") {
			t.Errorf("differing answers %v, want UnaryCall's $.messages[*].6", d)
		}
		onlyRacingStatus(t, d, "gRPC grpc.testing.TestService/UnaryCall")
	})
	t.Run("slower UnaryCall", func(t *testing.T) {
		slow := grpctest.StartWith(t, grpctest.Options{Delay: map[string]time.Duration{"/grpc.testing.TestService/UnaryCall": 30 * time.Millisecond}})
		code, doc, stderr := compare(t, slow)
		if code != exitRegression {
			t.Errorf("exit %d, want %d (regression); stderr %s", code, exitRegression, stderr)
		}
		var regressed []string
		for _, e := range doc.Endpoints {
			if e.Verdict == "regression" {
				regressed = append(regressed, e.Endpoint)
			}
		}
		if want := "gRPC grpc.testing.TestService/UnaryCall"; strings.Join(regressed, ",") != want {
			t.Errorf("regressions %v, want %s alone", regressed, want)
		}
		if d := doc.differing(); len(d) > 0 {
			t.Errorf("differing answers: %v", d)
		}
	})
}

// `replay run --check-responses` of a recording of grpc-go's interop
// client: a copy of the recorded server answers as recorded; one whose
// UnaryCall answers differ fails naming the field.
func TestRunCheckResponsesGRPC(t *testing.T) {
	snap, _, _ := recordInteropSnapshot(t)
	check := func(t *testing.T, srv *grpctest.Server) (int, responsesJSON, string) {
		code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", "http://"+srv.Addr, "--iterations", "2",
			"--check-responses", "--out", filepath.Join(t.TempDir(), "c.run"), "--format", "json")
		var doc responsesJSON
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s\n%s", err, stdout, stderr)
		}
		return code, doc, stderr
	}
	t.Run("same", func(t *testing.T) {
		code, doc, stderr := check(t, grpctest.Start(t, nil))
		d := doc.differing()
		onlyRacingStatus(t, d, "")
		if len(d) > 0 && !t.Failed() {
			return // only a deadline or cancel case's racing status differed
		}
		if code != exitOK || len(d) > 0 || doc.compared() == 0 {
			t.Errorf("exit %d, %d answers compared, differing %v; stderr %s", code, doc.compared(), doc.differing(), stderr)
			for _, e := range doc.Endpoints {
				if e.Responses != nil {
					for _, g := range e.Responses.Differences {
						t.Logf("%s %s: %.200q vs %.200q", e.Endpoint, g.Path, g.Baseline, g.Candidate)
					}
				}
			}
		}
	})
	t.Run("reflection", func(t *testing.T) {
		// --proto-reflect: the target's server reflection names the
		// fields, and its schema stays beside the run file.
		other := grpctest.StartWith(t, grpctest.Options{Reflection: true, Alter: func(method string, resp any) {
			if r, ok := resp.(*testpb.SimpleResponse); ok {
				r.Hostname = "candidate"
			}
		}})
		out := filepath.Join(t.TempDir(), "r.run")
		code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", "http://"+other.Addr, "--iterations", "1",
			"--check-responses", "--proto-reflect", "--out", out, "--format", "json")
		var doc responsesJSON
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s\n%s", err, stdout, stderr)
		}
		d := doc.differing()
		if got := d["gRPC grpc.testing.TestService/UnaryCall"]; code != exitRegression || !slices.Contains(got, "$.messages[*].hostname") {
			t.Errorf("exit %d, differing %v; want 99 and UnaryCall's $.messages[*].hostname; stderr %s", code, d, stderr)
		}
		onlyRacingStatus(t, d, "gRPC grpc.testing.TestService/UnaryCall")
		if _, err := os.Stat(out + session.ProtosetSuffix); err != nil {
			t.Errorf("no schema beside the run file: %v", err)
		}
	})
	t.Run("reflection refused", func(t *testing.T) {
		code, _, stderr := replayRun(t, "--snapshot", snap, "--target", "http://"+grpctest.Start(t, nil).Addr, "--iterations", "1",
			"--proto-reflect", "--out", filepath.Join(t.TempDir(), "r.run"))
		if code != exitError || !strings.Contains(stderr, "--proto-reflect") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("exit %d, stderr %q; want 1 and one line naming --proto-reflect", code, stderr)
		}
	})
	t.Run("another answer", func(t *testing.T) {
		other := grpctest.StartWith(t, grpctest.Options{Alter: func(method string, resp any) {
			if r, ok := resp.(*testpb.SimpleResponse); ok {
				r.Hostname = "candidate"
			}
		}})
		code, doc, _ := check(t, other)
		d := doc.differing()
		if got := d["gRPC grpc.testing.TestService/UnaryCall"]; code != exitRegression || !slices.Contains(got, "$.messages[*].6") {
			t.Errorf("exit %d, differing %v; want 99 and UnaryCall's $.messages[*].6", code, d)
		}
		onlyRacingStatus(t, d, "gRPC grpc.testing.TestService/UnaryCall")
	})
}

// onlyRacingStatus fails the test when a method other than want differs
// in anything but its status. The interop client's deadline and cancel
// cases end as their timers race (DEADLINE_EXCEEDED or CANCELLED), so
// their status may differ from the recording's on a busy machine;
// nothing else may.
func onlyRacingStatus(t *testing.T, differing map[string][]string, want string) {
	t.Helper()
	for method, paths := range differing {
		switch {
		case method == want:
		case !slices.Equal(paths, []string{"status"}):
			t.Errorf("%s differs in %v; want only %s to differ", method, paths, want)
		default:
			t.Logf("%s: its status differs from the recording's (a deadline or cancel case on a busy machine)", method)
		}
	}
}
