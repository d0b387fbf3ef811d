package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/replaykit/replay/internal/junitcheck"
)

// ghAction is the part of action.yml that a GitHub runner reads.
type ghAction struct {
	Inputs map[string]struct {
		Required bool   `yaml:"required"`
		Default  string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID    string            `yaml:"id"`
			Shell string            `yaml:"shell"`
			Run   string            `yaml:"run"`
			Uses  string            `yaml:"uses"`
			Env   map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

// repoRoot is the repository's root, where action.yml is.
const repoRoot = "../.."

func loadAction(t *testing.T) *ghAction {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a ghAction
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if a.Runs.Using != "composite" || len(a.Runs.Steps) == 0 {
		t.Fatalf("action.yml runs %q with %d steps, want a composite action", a.Runs.Using, len(a.Runs.Steps))
	}
	return &a
}

// actionResult is what one run of the action left: the exit code of its
// step, its log, its outputs and the step summary.
type actionResult struct {
	code            int
	log             string
	outputs         map[string]string
	summary, stderr string
}

var expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// runAction runs action.yml's steps as a GitHub runner does a composite
// action: its expressions evaluated (inputs given, or their defaults;
// github.action_path is the repository; runner.temp a temp dir), each run
// step as `bash --noprofile --norc -eo pipefail FILE` in workspace with
// the step's env and the runner's GITHUB_* files (stand-ins in temp
// files); then the action's outputs from the steps'.
func runAction(t *testing.T, a *ghAction, workspace string, inputs map[string]string) actionResult {
	t.Helper()
	temp := t.TempDir()
	for k := range inputs {
		if _, ok := a.Inputs[k]; !ok {
			t.Fatalf("input %q is not in action.yml", k)
		}
	}
	steps := map[string]map[string]string{}
	eval := func(s string) string {
		return expression.ReplaceAllStringFunc(s, func(m string) string {
			e := expression.FindStringSubmatch(m)[1]
			switch parts := strings.Split(e, "."); {
			case len(parts) == 2 && parts[0] == "inputs":
				in, ok := a.Inputs[parts[1]]
				if !ok {
					t.Fatalf("action.yml uses undeclared input %q", parts[1])
				}
				if v, ok := inputs[parts[1]]; ok {
					return v
				}
				return in.Default
			case e == "github.action_path":
				return repoRoot
			case e == "runner.temp":
				return temp
			case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
				return steps[parts[1]][parts[3]]
			}
			t.Fatalf("action.yml: expression %q not understood by this runner", e)
			return ""
		})
	}
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GITHUB_") && !strings.HasPrefix(kv, "INPUT_") && !strings.HasPrefix(kv, "RUNNER_") {
			base = append(base, kv)
		}
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	res := actionResult{outputs: map[string]string{}}
	var summary strings.Builder
	for i, st := range a.Runs.Steps {
		if st.Uses != "" || st.Shell != "bash" {
			t.Fatalf("step %d: uses %q, shell %q; this runner runs bash steps only", i, st.Uses, st.Shell)
		}
		script, out, sum := filepath.Join(temp, fmt.Sprint("step", i)), filepath.Join(temp, fmt.Sprint("output", i)), filepath.Join(temp, fmt.Sprint("summary", i))
		if err := os.WriteFile(script, []byte(eval(st.Run)), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{out, sum} {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir = workspace
		cmd.Env = append(slices.Clone(base), "CI=true", "GITHUB_ACTIONS=true", "GITHUB_ACTION_PATH="+root, "GITHUB_WORKSPACE="+workspace,
			"RUNNER_TEMP="+temp, "GITHUB_OUTPUT="+out, "GITHUB_STEP_SUMMARY="+sum)
		for k, v := range st.Env {
			cmd.Env = append(cmd.Env, k+"="+eval(v))
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		t.Logf("step %s: %v in %s", st.ID, err, time.Since(start).Round(time.Millisecond))
		res.log += stdout.String()
		res.stderr += stderr.String()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			res.code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(sum)
		summary.Write(b)
		steps[st.ID] = readOutputs(t, out)
		if res.code != 0 {
			break
		}
	}
	for k, o := range a.Outputs {
		res.outputs[k] = eval(o.Value)
	}
	res.summary = summary.String()
	return res
}

// readOutputs reads a step's GITHUB_OUTPUT file (NAME=VALUE lines).
func readOutputs(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("GITHUB_OUTPUT line %q is not NAME=VALUE", line)
		}
		m[k] = v
	}
	return m
}

// TestActionInputs: action.yml passes every input to its script under the
// name the script reads (INPUT_ and the name in capitals, - as _), the
// script reads no other, and every output is one the script writes.
func TestActionInputs(t *testing.T) {
	a := loadAction(t)
	script, err := os.ReadFile(filepath.Join(repoRoot, "scripts", "ci-action"))
	if err != nil {
		t.Fatal(err)
	}
	env := a.Runs.Steps[0].Env
	for name := range a.Inputs {
		v := "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if got, want := env[v], "${{ inputs."+name+" }}"; got != want {
			t.Errorf("step env %s = %q, want %q", v, got, want)
		}
		if !bytes.Contains(script, []byte(v)) {
			t.Errorf("scripts/ci-action does not read %s", v)
		}
	}
	for _, v := range regexp.MustCompile(`INPUT_[A-Z_]+`).FindAll(script, -1) {
		if _, ok := env[string(v)]; !ok {
			t.Errorf("scripts/ci-action reads %s, which action.yml does not set", v)
		}
	}
	for name, o := range a.Outputs {
		if want := "${{ steps.compare.outputs." + name + " }}"; o.Value != want {
			t.Errorf("output %s = %q, want %q", name, o.Value, want)
		}
		if !bytes.Contains(script, []byte(`echo "`+name+`=`)) {
			t.Errorf("scripts/ci-action never writes output %s", name)
		}
	}
}

// TestActionEndToEnd runs the GitHub Action (action.yml and its script) on
// the demo workload under a stand-in runner environment: it builds replay
// with make, an A/A comparison passes, a candidate with the N+1
// (APP_SLOW=1) fails the step with verdict=regression and its Markdown in
// the step summary, a miswired candidate fails it with verdict
// inconclusive and the report in the summary, the same runs compared offline with
// fail-on-regression false pass with the verdict still regression, and
// bad inputs fail with verdict=error and the reason in the summary.
func TestActionEndToEnd(t *testing.T) {
	env := newOrdersEnv(t)
	a := loadAction(t)
	workspace := t.TempDir()
	app := env.bin + " demo orders"
	inputs := func(candidate string, more map[string]string) map[string]string {
		in := map[string]string{
			"snapshot": env.snap, "baseline-cmd": app, "candidate-cmd": app, "duration": "2s",
			"args": strings.Join([]string{
				"--env DATABASE_URL=" + env.dbURL, "--env CATALOG_URL=https://catalog.demo.test", "--mock catalog.demo.test:443",
				"# comments and empty lines are skipped", "",
				"--ca-dir=" + filepath.Join(env.dir, "ca"), "--postgres " + env.dbAddr, "--reset " + env.reset, "  --warmup 300ms  ",
				"--baseline-env APP_SLOW=0", "--candidate-env " + candidate,
				// The rules of the comparison go through args as any flag does.
				"--ignore-header X-Request-Id"}, "\n"),
		}
		for k, v := range more {
			in[k] = v
		}
		return in
	}
	checkJUnit := func(t *testing.T, dir string) {
		doc, err := os.ReadFile(filepath.Join(dir, "report.xml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := junitcheck.Check(doc); err != nil {
			t.Errorf("report.xml breaks the junit-10 rules: %v", err)
		}
		if err := junitcheck.XMLLint(context.Background(), doc); err != nil && !errors.Is(err, junitcheck.ErrNoXMLLint) {
			t.Errorf("report.xml: %v", err)
		}
		// The endpoints' suite lasts the load: 2 s per side.
		m := regexp.MustCompile(`<testsuite name="replay.compare"[^>]* time="([0-9.]+)"`).FindSubmatch(doc)
		if m == nil {
			t.Fatalf("no replay.compare suite with a time in:\n%s", doc)
		}
		if secs, err := strconv.ParseFloat(string(m[1]), 64); err != nil || secs < 3 || secs > 10 {
			t.Errorf("replay.compare suite time %q, want the load's 4 s or so:\n%s", m[1], doc)
		}
	}

	t.Run("A/A passes", func(t *testing.T) {
		r := runAction(t, a, workspace, inputs("APP_SLOW=0", map[string]string{"out": "reports/aa"}))
		dir := filepath.Join(workspace, "reports", "aa")
		// A machine too noisy to judge any endpoint in 2 s may not pass
		// the step: it could not tell (exit 1, the reason annotated).
		noisy := r.code == exitError && r.outputs["exit-code"] == "1" && r.outputs["verdict"] == "inconclusive" &&
			strings.Contains(r.log, "::error title=replay compare::compare: inconclusive: no endpoint could be judged")
		if r.code != exitOK && !noisy || r.code == exitOK && r.outputs["exit-code"] != "0" || r.outputs["report-dir"] != dir {
			t.Fatalf("exit %d, outputs %v; want 0 (or 1 when no endpoint could be judged) and report-dir %s\nlog: %s\nstderr: %s", r.code, r.outputs, dir, r.log, r.stderr)
		}
		if noisy {
			t.Logf("no endpoint could be judged on this machine: exit 1, as it must be")
		}
		if v := r.outputs["verdict"]; v != "unchanged" && v != "inconclusive" && v != "improvement" {
			t.Errorf("verdict %q, want no regression", v)
		}
		if !strings.Contains(r.stderr, "go build -buildvcs=auto -o") {
			t.Errorf("replay was not built with make build:\n%s", r.stderr)
		}
		md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
		if len(md) == 0 || !strings.Contains(r.summary, string(md)) || !strings.Contains(r.summary, "### Result") {
			t.Errorf("step summary %q, want the Markdown report %q", r.summary, md)
		}
		if r.outputs["markdown"] != filepath.Join(dir, "report.md") || r.outputs["junit"] != filepath.Join(dir, "report.xml") || !isFile(filepath.Join(dir, "report.html")) {
			t.Errorf("outputs %v; want markdown and junit in %s, and report.html there", r.outputs, dir)
		}
		checkJUnit(t, dir)
	})

	regressed := filepath.Join(env.dir, "regressed")
	t.Run("a regression fails", func(t *testing.T) {
		r := runAction(t, a, workspace, inputs("APP_SLOW=1", map[string]string{"out": regressed, "replay": env.bin, "goals": "p95<5s\n\n"}))
		if r.code != exitRegression || r.outputs["verdict"] != "regression" || r.outputs["exit-code"] != "99" || r.outputs["report-dir"] != regressed {
			t.Fatalf("exit %d, outputs %v; want 99 and verdict regression\nlog: %s\nstderr: %s", r.code, r.outputs, r.log, r.stderr)
		}
		for _, want := range []string{"### Result", "Regression in GET /orders", "order_items", "p95<5s"} {
			if !strings.Contains(r.summary, want) {
				t.Errorf("step summary lacks %q:\n%s", want, r.summary)
			}
		}
		if !strings.Contains(r.log, "::error title=replay compare::Regression in GET /orders") {
			t.Errorf("no error annotation naming the regression in the log:\n%s", r.log)
		}
		if !strings.Contains(r.log, "replay compare --snapshot --baseline-cmd") || strings.Contains(r.log, env.dbURL) {
			t.Errorf("the log names the flags and not their values (they may hold passwords)? %s", r.log)
		}
		if strings.Contains(r.stderr, "go build") {
			t.Errorf("replay was built although the replay input named a binary")
		}
		checkJUnit(t, regressed)
	})

	t.Run("a wiring fault", func(t *testing.T) {
		// The candidate reaches the database by its Unix socket, a path no
		// address rewrite can point at its SQL counter (localhost for
		// 127.0.0.1 is rewritten, by address): the comparison runs, is
		// inconclusive and replay exits 1 with the reason; the report still
		// goes to the summary.
		if env.dbSocketURL == "" {
			t.Skip("the database is not this test's own: no Unix socket to bypass the counter by")
		}
		in := inputs("APP_SLOW=0", map[string]string{"replay": env.bin, "out": filepath.Join(env.dir, "miswired")})
		in["args"] += "\n--candidate-env DATABASE_URL=" + env.dbSocketURL
		r := runAction(t, a, workspace, in)
		if r.code != exitError || r.outputs["verdict"] != "inconclusive" || r.outputs["exit-code"] != "1" {
			t.Fatalf("exit %d, outputs %v; want 1 and verdict inconclusive\nlog: %s\nstderr: %s", r.code, r.outputs, r.log, r.stderr)
		}
		if !strings.Contains(r.summary, "### Result") || !strings.Contains(r.summary, "Wiring") ||
			!strings.Contains(r.log, "::error title=replay compare::compare: 1 wiring fault, so the figures do not measure what they claim") {
			t.Errorf("summary %q, log %q; want the report with its Wiring list and an error annotation with the reason", r.summary, r.log)
		}
	})

	t.Run("could not tell", func(t *testing.T) {
		// No endpoint could be judged (too few requests): exit 1 and the
		// reason, never a green step; fail-on-inconclusive makes it a gate
		// failure (99).
		dir := t.TempDir()
		base, cand := gateRuns(t, dir, map[string]int{"GET /a": 5})
		runs := base + "\n" + cand + "\n"
		r := runAction(t, a, workspace, map[string]string{"runs": runs, "replay": env.bin, "out": filepath.Join(dir, "default"), "formats": ""})
		if r.code != exitError || r.outputs["verdict"] != "inconclusive" || r.outputs["exit-code"] != "1" ||
			!strings.Contains(r.log, "::error title=replay compare::compare: inconclusive: no endpoint could be judged") {
			t.Errorf("exit %d, outputs %v; want 1, verdict inconclusive and the reason annotated\nlog: %s\nstderr: %s", r.code, r.outputs, r.log, r.stderr)
		}
		r = runAction(t, a, workspace, map[string]string{"runs": runs, "replay": env.bin, "out": filepath.Join(dir, "fail"), "formats": "", "fail-on-inconclusive": "true"})
		if r.code != exitRegression || r.outputs["verdict"] != "inconclusive" || r.outputs["exit-code"] != "99" ||
			!strings.Contains(r.log, "::error title=replay compare::Inconclusive, which fails the gate (--fail-on inconclusive)") {
			t.Errorf("fail-on-inconclusive: exit %d, outputs %v; want 99 and the outcome annotated\nlog: %s\nstderr: %s", r.code, r.outputs, r.log, r.stderr)
		}
	})

	t.Run("offline, fail-on-regression false", func(t *testing.T) {
		runs := filepath.Join(regressed, "baseline.run") + "\n" + filepath.Join(regressed, "candidate.run") + "\n"
		out := filepath.Join(env.dir, "offline")
		r := runAction(t, a, workspace, map[string]string{"runs": runs, "replay": env.bin, "fail-on-regression": "false", "out": out, "formats": "junit"})
		if r.code != exitOK || r.outputs["verdict"] != "regression" || r.outputs["exit-code"] != "99" {
			t.Fatalf("exit %d, outputs %v; want 0 with verdict regression and exit-code 99\nlog: %s\nstderr: %s", r.code, r.outputs, r.log, r.stderr)
		}
		if !strings.Contains(r.log, "::warning title=replay compare::Regression in GET /orders") || !strings.Contains(r.summary, "Regression in GET /orders") {
			t.Errorf("log %q and summary %q; want a warning and the report", r.log, r.summary)
		}
		if isFile(filepath.Join(out, "report.html")) || !isFile(filepath.Join(out, "report.xml")) {
			t.Errorf("formats junit: want report.xml and no report.html in %s", out)
		}
		// No formats beyond those the action reads.
		out = filepath.Join(env.dir, "offline-bare")
		r = runAction(t, a, workspace, map[string]string{"runs": runs, "replay": env.bin, "out": out, "formats": ""})
		if r.code != exitRegression || r.outputs["verdict"] != "regression" || r.outputs["junit"] != "" || !isFile(filepath.Join(out, "report.md")) || isFile(filepath.Join(out, "report.xml")) {
			t.Errorf("formats empty: exit %d, outputs %v; want 99, no junit output, report.md and no report.xml in %s\nstderr: %s", r.code, r.outputs, out, r.stderr)
		}
	})

	t.Run("bad inputs", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			inputs map[string]string
			code   int
			reason string
		}{
			{"no snapshot", map[string]string{"replay": env.bin}, exitUsage, "input snapshot is required"},
			{"snapshot and runs", map[string]string{"replay": env.bin, "snapshot": env.snap, "runs": "a.run\nb.run"}, exitUsage, "either snapshot or runs"},
			{"one run file", map[string]string{"replay": env.bin, "runs": "a.run"}, exitUsage, "want two run files"},
			{"no replay binary", map[string]string{"replay": filepath.Join(env.dir, "nothing"), "snapshot": env.snap}, exitUsage, "not an executable file"},
			{"a flag replay refuses", inputs("APP_SLOW=1", map[string]string{"replay": env.bin, "args": "--vus lots"}), exitUsage, `invalid argument "lots" for "--vus"`},
			// The reports of the regression above are not this run's.
			{"a flag refused, out of an earlier run", inputs("APP_SLOW=1", map[string]string{"replay": env.bin, "args": "--vus lots", "out": regressed}), exitUsage, `invalid argument "lots" for "--vus"`},
			{"a snapshot that is not there", inputs("APP_SLOW=1", map[string]string{"replay": env.bin, "snapshot": "missing.snap"}), exitError, "missing.snap"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := runAction(t, a, workspace, tc.inputs)
				if r.code != tc.code || r.outputs["verdict"] != "error" || r.outputs["exit-code"] != fmt.Sprint(tc.code) {
					t.Errorf("exit %d, outputs %v; want %d and verdict error\nlog: %s\nstderr: %s", r.code, r.outputs, tc.code, r.log, r.stderr)
				}
				if !strings.Contains(r.summary, "could not run") || !strings.Contains(r.summary, tc.reason) || !strings.Contains(r.log, "::error title=replay compare::") {
					t.Errorf("summary %q, log %q; want the reason %q in both", r.summary, r.log, tc.reason)
				}
			})
		}
	})
}
