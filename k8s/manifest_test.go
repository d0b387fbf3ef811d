package k8s

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/replaykit/replay/internal/golden"
)

func testManifest() *Manifest {
	return &Manifest{Shards: 3, Image: "ghcr.io/acme/replay:1.4", Namespace: "load", Name: "orders-load",
		Deadline: 90*time.Minute + 500*time.Millisecond, CPU: "2", Memory: "1Gi",
		RunArgs: []string{"--snapshot", "/snap/orders.snap", "--target", "http://orders.sandbox:8080", "--rate", "3000/s", "--duration", "10m"}}
}

// decode reads the manifest back strictly: an unknown or misplaced field
// is an error, as kubectl apply --validate=strict makes it.
func decode(t *testing.T, text []byte) (*corev1.Service, *batchv1.Job) {
	t.Helper()
	docs := strings.Split(string(text), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d YAML documents, want 2 (the Service, the Job)", len(docs))
	}
	var svc corev1.Service
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &svc); err != nil {
		t.Fatalf("the Service does not decode strictly: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &job); err != nil {
		t.Fatalf("the Job does not decode strictly: %v", err)
	}
	if svc.APIVersion != "v1" || svc.Kind != "Service" || job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("kinds %s/%s and %s/%s, want v1/Service and batch/v1/Job", svc.APIVersion, svc.Kind, job.APIVersion, job.Kind)
	}
	return &svc, &job
}

func write(t *testing.T, m *Manifest) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestManifestGolden(t *testing.T) {
	golden.Check(t, "manifest.yaml", write(t, testManifest()))
}

// TestManifestStrict: the YAML decodes strictly into the typed objects and
// gives back exactly the objects it was made from; a field the types do
// not have is refused, so the check is real.
func TestManifestStrict(t *testing.T) {
	m := testManifest()
	text := write(t, m)
	svc, job := decode(t, text)
	wantSvc, wantJob := m.Objects()
	if diff := cmp.Diff(wantSvc, svc); diff != "" {
		t.Errorf("the Service read back differs (-made +read):\n%s", diff)
	}
	if diff := cmp.Diff(wantJob, job, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("the Job read back differs (-made +read):\n%s", diff)
	}
	bad := strings.Replace(string(text), "  completionMode: Indexed\n", "  completionMode: Indexed\n  completionsMode: Indexed\n", 1)
	var j batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(strings.Split(bad, "\n---\n")[1]), &j); err == nil {
		t.Error("a misspelt field decoded strictly")
	}
}

// TestManifestInvariants: for every N, the Job runs N shards at once with
// no retries and a deadline, the Service is headless and selects the
// Job's pods, the pods' subdomain is the Service, and shard k runs
// replay run with the user's flags, --shard /N, the barrier at shard 0's
// name, and --print-run.
func TestManifestInvariants(t *testing.T) {
	for _, n := range []int{1, 2, 7, 1000, MaxShards} {
		m := testManifest()
		m.Shards, m.Name, m.Deadline = n, "ld", 10*time.Minute
		svc, job := decode(t, write(t, m))
		s := job.Spec
		check := func(what string, got, want any) {
			t.Helper()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("N=%d: %s = %v, want %v", n, what, got, want)
			}
		}
		check("completionMode", *s.CompletionMode, batchv1.IndexedCompletion)
		check("completions", *s.Completions, n)
		check("parallelism", *s.Parallelism, n)
		check("backoffLimitPerIndex", *s.BackoffLimitPerIndex, 0)
		check("maxFailedIndexes", *s.MaxFailedIndexes, 0)
		check("podReplacementPolicy", *s.PodReplacementPolicy, batchv1.Failed)
		check("activeDeadlineSeconds", *s.ActiveDeadlineSeconds, 600)
		check("restartPolicy", s.Template.Spec.RestartPolicy, corev1.RestartPolicyNever)
		check("subdomain", s.Template.Spec.Subdomain, svc.Name)
		check("clusterIP", svc.Spec.ClusterIP, "None")
		check("publishNotReadyAddresses", svc.Spec.PublishNotReadyAddresses, true)
		check("selects the pods", labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(s.Template.Labels)), true)
		check("namespaces", svc.Namespace+" "+job.Namespace, "load load")
		c := s.Template.Spec.Containers[0]
		check("service port = container port", svc.Spec.Ports[0].Port, c.Ports[0].ContainerPort)
		want := append([]string{"replay", "run"}, m.RunArgs...)
		want = append(want, "--shard", fmt.Sprintf("/%d", n), "--barrier", "ld-0.ld:7077", "--out", RunPath, "--print-run")
		if !slices.Equal(c.Command, want) {
			t.Errorf("N=%d: command %q, want %q", n, c.Command, want)
		}
		if !strings.HasPrefix(RunPath, c.VolumeMounts[0].MountPath+"/") {
			t.Errorf("N=%d: the run file %s is not on the mounted volume %s", n, RunPath, c.VolumeMounts[0].MountPath)
		}
		if len(c.Env) != 1 || c.Env[0].Name != "TMPDIR" || c.Env[0].Value != c.VolumeMounts[0].MountPath {
			t.Errorf("N=%d: env %v, want TMPDIR (the spool's directory) on the mounted volume", n, c.Env)
		}
		check("CPU request = limit", c.Resources.Requests.Cpu().String()+" "+c.Resources.Limits.Cpu().String(), "2 2")
		if err := Check(svc, job); err != nil {
			t.Errorf("N=%d: %v", n, err)
		}
	}
}

// TestCheckRefuses: each rule of Check, broken alone, is refused with its
// own message.
func TestCheckRefuses(t *testing.T) {
	for _, c := range []struct {
		want   string
		break_ func(*corev1.Service, *batchv1.Job)
	}{
		{"service name", func(s *corev1.Service, j *batchv1.Job) { s.Name = "9lives" }},
		{"job name", func(s *corev1.Service, j *batchv1.Job) { j.Name = strings.Repeat("a", 64) }},
		{"namespace", func(s *corev1.Service, j *batchv1.Job) { s.Namespace, j.Namespace = "Load", "Load" }},
		{"the service is in namespace", func(s *corev1.Service, j *batchv1.Job) { s.Namespace = "other" }},
		{"clusterIP", func(s *corev1.Service, j *batchv1.Job) { s.Spec.ClusterIP = "" }},
		{"publishNotReadyAddresses", func(s *corev1.Service, j *batchv1.Job) { s.Spec.PublishNotReadyAddresses = false }},
		{"service port name", func(s *corev1.Service, j *batchv1.Job) { s.Spec.Ports[0].Name = "the-barrier-port" }},
		{"does not select", func(s *corev1.Service, j *batchv1.Job) { s.Spec.Selector = map[string]string{"app": "x"} }},
		{"completionMode", func(s *corev1.Service, j *batchv1.Job) { j.Spec.CompletionMode = nil }},
		{"completions: required", func(s *corev1.Service, j *batchv1.Job) { j.Spec.Completions = nil }},
		{"parallelism", func(s *corev1.Service, j *batchv1.Job) { j.Spec.Parallelism = ptr(int32(1)) }},
		{"completions 100001", func(s *corev1.Service, j *batchv1.Job) {
			j.Spec.Completions, j.Spec.Parallelism = ptr(int32(100001)), ptr(int32(100001))
		}},
		{"backoffLimitPerIndex", func(s *corev1.Service, j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr(int32(1)) }},
		{"maxFailedIndexes", func(s *corev1.Service, j *batchv1.Job) { j.Spec.MaxFailedIndexes = nil }},
		{"activeDeadlineSeconds", func(s *corev1.Service, j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr(int64(0)) }},
		{"podReplacementPolicy", func(s *corev1.Service, j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = ptr(batchv1.TerminatingOrFailed)
		}},
		{"restartPolicy", func(s *corev1.Service, j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}},
		{"pod labels key", func(s *corev1.Service, j *batchv1.Job) { j.Spec.Template.Labels["bad key"] = "x" }},
		{"pod subdomain", func(s *corev1.Service, j *batchv1.Job) { j.Spec.Template.Spec.Subdomain = "other" }},
		{"container image", func(s *corev1.Service, j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = " img" }},
		{"volume mount", func(s *corev1.Service, j *batchv1.Job) { j.Spec.Template.Spec.Volumes = nil }},
		{"over its limit", func(s *corev1.Service, j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
		}},
		{"not the container's barrier port", func(s *corev1.Service, j *batchv1.Job) { s.Spec.Ports[0].Port = 8080 }},
		{"want --barrier", func(s *corev1.Service, j *batchv1.Job) {
			c := j.Spec.Template.Spec.Containers[0].Command
			c[slices.Index(c, "--barrier")+1] = "orders-load-1.orders-load:7077"
		}},
		{"want --shard /3", func(s *corev1.Service, j *batchv1.Job) {
			c := j.Spec.Template.Spec.Containers[0].Command
			c[slices.Index(c, "--shard")+1] = "0/3"
		}},
		{"want --print-run", func(s *corev1.Service, j *batchv1.Job) {
			c := &j.Spec.Template.Spec.Containers[0].Command
			*c = (*c)[:len(*c)-1]
		}},
		{"hostname", func(s *corev1.Service, j *batchv1.Job) {
			j.Name = strings.Repeat("a", 62)
			c := j.Spec.Template.Spec.Containers[0].Command
			c[slices.Index(c, "--barrier")+1] = j.Name + "-0.orders-load:7077"
		}},
	} {
		m := testManifest()
		svc, job := m.Objects()
		if err := Check(svc, job); err != nil {
			t.Fatalf("the manifest as made: %v", err)
		}
		c.break_(svc, job)
		err := Check(svc, job)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("broken %q: Check says %v", c.want, err)
		}
	}
}

// TestManifestParse: the manifest's flags before "--" wherever they are,
// every other argument and all after "--" for replay run, checked with
// run's flags when given.
func TestManifestParse(t *testing.T) {
	runFlags := func() *pflag.FlagSet {
		f := pflag.NewFlagSet("run", pflag.ContinueOnError)
		f.String("snapshot", "", "")
		f.String("target", "", "")
		f.String("cmd", "", "")
		f.String("name", "", "")
		f.Int("vus", 1, "")
		return f
	}
	parse := func(args ...string) (*Manifest, error) {
		m := &Manifest{RunFlags: runFlags()}
		f := pflag.NewFlagSet("manifest", pflag.ContinueOnError)
		f.BoolP("help", "h", false, "")
		m.AddFlags(f)
		return m, m.Parse(f, args)
	}
	for _, c := range []struct {
		args    string
		runArgs string
		err     string
	}{
		{args: "--shards 3 --image img --snapshot s.snap --target http://t --vus=4", runArgs: "--snapshot s.snap --target http://t --vus=4"},
		{args: "--snapshot s.snap --shards=3 --target http://t --image img --name load", runArgs: "--snapshot s.snap --target http://t"},
		{args: "--shards 3 --image img -- --snapshot s.snap --name run1 --target http://t", runArgs: "--snapshot s.snap --name run1 --target http://t"},
		{args: "--shards 3 --image img --snapshot s.snap --out x.run", err: "run flag --out: the manifest sets it"},
		{args: "--shards 3 --image img -- --snapshot s.snap --print-run", err: "run flag --print-run"},
		{args: "--shards 3 --image img -- --shard 0/3", err: "run flag --shard"},
		{args: "--shards 3 --image img --snapshot s.snap --vuss 3", err: "run flags: unknown flag: --vuss"},
		{args: "--shards 3 --image img --snapshot s.snap extra", err: `"extra" is no flag`},
		{args: "--shards three --image img", err: "invalid argument"},
		{args: "--image img", err: "--shards 0: want 1 to 100000"},
		{args: "--shards 3", err: `--image ""`},
		{args: "--shards 3 --image img --namespace Load", err: `--namespace "Load"`},
		{args: "--shards 3 --image img --memory 0", err: `--memory "0": want more than zero`},
		{args: "--shards 3 --image img --deadline 500ms", err: "--deadline 500ms: want at least 1s"},
		{args: "--shards 2 --image x -- --target http://a", err: "run flags: --snapshot SNAP is required"},
		{args: "--shards 2 --image x --snapshot s.snap", err: "--target URL or --cmd COMMAND"},
		{args: "--shards 2 --image x --snapshot s.snap --cmd ./app", runArgs: "--snapshot s.snap --cmd ./app"},
	} {
		m, err := parse(strings.Fields(c.args)...)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one with %q", c.args, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.args, err)
		case c.err == "" && strings.Join(m.RunArgs, " ") != c.runArgs:
			t.Errorf("%s: run flags %q, want %q", c.args, m.RunArgs, c.runArgs)
		}
	}
	if m, err := parse("--shards", "2", "--image", "i", "--name", "load", "--", "--snapshot", "s", "--target", "http://t"); err != nil || m.Name != "load" || m.Shards != 2 {
		t.Errorf("the manifest's --name before --: name %q, shards %d, %v", m.Name, m.Shards, err)
	}
	if _, err := parse("--shards", "2", "-h"); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("-h: %v, want pflag.ErrHelp", err)
	}
}
