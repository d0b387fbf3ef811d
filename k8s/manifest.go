package k8s

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The fixed parts of the manifest.
const (
	// Container is the shard's container name.
	Container = "replay"
	// BarrierPort is the port shard 0 listens on for the barrier.
	BarrierPort = 7077
	// RunPath is where a shard writes its run file: an emptyDir (also its
	// TMPDIR, for the spool), so a read-only root filesystem does no harm.
	RunPath = "/var/run/replay/run.db"
	runDir  = "/var/run/replay"
	// LabelJobName is the label the Job controller puts on a Job's pods
	// (Kubernetes 1.27 and later); LabelIndex the annotation (and label)
	// holding a pod's completion index.
	LabelJobName = batchv1.JobNameLabel                 // "batch.kubernetes.io/job-name"
	LabelIndex   = batchv1.JobCompletionIndexAnnotation // "batch.kubernetes.io/job-completion-index"
	// labelRun is replay's own label on everything the manifest makes.
	labelRun = "replay.dev/run"
	// MaxShards is the Job controller's limit on an Indexed Job's
	// parallelism (10^5).
	MaxShards = 100000
)

// ownFlags are the run flags the manifest sets itself.
var ownFlags = []string{"out", "shard", "shards", "barrier", "print-run", "local"}

// Manifest is what `replay k8s manifest` prints: a headless Service and an
// Indexed Job whose N pods each run one shard of the same plan.
type Manifest struct {
	// Shards is N (--shards), Image the container image holding replay
	// (--image; `replay` on its PATH, and the snapshot at the path the run
	// flags give), Namespace (--namespace) and Name (--name: the Job's and
	// the Service's) where and what to make.
	Shards           int
	Image, Namespace string
	Name             string
	Deadline         time.Duration // --deadline: activeDeadlineSeconds
	RunArgs          []string      // the flags of replay run for every shard (after --)
	// RunFlags, when set, are replay run's flags: Validate parses RunArgs
	// with them, so a misspelt flag is refused here, not in every pod.
	RunFlags *pflag.FlagSet
	// CPU and Memory (--cpu, --memory) are each shard's resource
	// requests, and limits too (a load generator sharing its CPU measures
	// its neighbours); empty: none.
	CPU, Memory string
	// ClientSecret (--oauth2-client-secret-k8s-secret NAME[:KEY]) is the
	// Secret, and its key (default DefaultSecretKey), the shards' OAuth2
	// client secret comes from (secret.go); empty: none.
	ClientSecret string
}

// Validate checks the options; its errors are usage errors.
func (m *Manifest) Validate() error {
	var errs []string
	if m.Shards < 1 || m.Shards > MaxShards {
		errs = append(errs, fmt.Sprintf("--shards %d: want 1 to %d", m.Shards, MaxShards))
	}
	if strings.TrimSpace(m.Image) == "" || strings.TrimSpace(m.Image) != m.Image {
		errs = append(errs, fmt.Sprintf("--image %q: want an image reference (with replay on its PATH)", m.Image))
	}
	if m.Deadline < time.Second {
		errs = append(errs, fmt.Sprintf("--deadline %s: want at least 1s", m.Deadline))
	}
	errs = append(errs, nameErrors("--namespace", m.Namespace, dns1123Label)...)
	errs = append(errs, nameErrors("--name", m.Name, dns1035Label)...)
	if n := len(hostname(m.Name, max(m.Shards, 1)-1)); n > 63 {
		errs = append(errs, fmt.Sprintf("--name %q: the last shard's hostname %s is %d characters, over 63", m.Name, hostname(m.Name, m.Shards-1), n))
	}
	for _, q := range []struct{ flag, v string }{{"--cpu", m.CPU}, {"--memory", m.Memory}} {
		if _, err := parseQuantity(q.v); err != nil {
			errs = append(errs, fmt.Sprintf("%s %q: %v", q.flag, q.v, err))
		}
	}
	for _, a := range m.RunArgs {
		for _, f := range ownFlags {
			if a == "--"+f || strings.HasPrefix(a, "--"+f+"=") {
				errs = append(errs, fmt.Sprintf("run flag --%s: the manifest sets it for every shard", f))
			}
		}
	}
	var run *pflag.FlagSet // parsed
	if m.RunFlags != nil {
		if err := m.RunFlags.Parse(m.RunArgs); err != nil {
			errs = append(errs, fmt.Sprintf("run flags: %v", err))
		} else if m.RunFlags.NArg() > 0 {
			errs = append(errs, fmt.Sprintf("run flags: %q is no flag (replay run takes none)", m.RunFlags.Arg(0)))
		} else {
			errs = append(errs, missingRunFlags(m.RunFlags)...)
			run = m.RunFlags
		}
	}
	errs = append(errs, m.secretErrors(run)...)
	if len(errs) > 0 {
		return errors.New("k8s manifest: " + strings.Join(errs, "; "))
	}
	return nil
}

// missingRunFlags names the flags replay run requires that are not in run
// (parsed): without them every pod would fail.
func missingRunFlags(run *pflag.FlagSet) []string {
	given := func(name string) bool { f := run.Lookup(name); return f == nil || f.Changed }
	var errs []string
	if !given("snapshot") {
		errs = append(errs, "run flags: --snapshot SNAP is required (the snapshot's path in the image)")
	}
	if !given("target") && !given("cmd") {
		errs = append(errs, "run flags: give the build to replay against: --target URL or --cmd COMMAND")
	}
	return errs
}

// hostname is the hostname the Job controller gives shard k's pod.
func hostname(job string, k int) string { return job + "-" + strconv.Itoa(k) }

// BarrierAddr is the address every shard gives --barrier: shard 0's
// hostname under the Service (the pod's subdomain), found through the
// cluster's DNS from any pod of the namespace.
func (m *Manifest) BarrierAddr() string {
	return fmt.Sprintf("%s.%s:%d", hostname(m.Name, 0), m.Name, BarrierPort)
}

// ShardCommand is a shard's command line: replay run with the user's
// flags, its shard (k from JOB_COMPLETION_INDEX, which the Job controller
// sets in each pod), the barrier, a run file in the emptyDir, and the run
// file printed at the end of its log.
func (m *Manifest) ShardCommand() []string {
	cmd := []string{"replay", "run"}
	cmd = append(cmd, m.RunArgs...)
	return append(cmd,
		"--shard", "/"+strconv.Itoa(m.Shards),
		"--barrier", m.BarrierAddr(),
		"--out", RunPath,
		"--print-run")
}

// Objects returns the Service and the Job.
func (m *Manifest) Objects() (*corev1.Service, *batchv1.Job) {
	labels := map[string]string{labelRun: m.Name}
	meta := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: labels}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, // headless: DNS names the pods
			// The barrier's address must resolve before any shard is
			// ready (they have no readiness probe to pass).
			PublishNotReadyAddresses: true,
			Selector:                 map[string]string{labelRun: m.Name},
			Ports: []corev1.ServicePort{{
				Name: "barrier", Port: BarrierPort, TargetPort: intstr.FromInt32(BarrierPort), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
	indexed := batchv1.IndexedCompletion
	replace := batchv1.Failed
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed,
			Completions:    ptr(int32(m.Shards)),
			Parallelism:    ptr(int32(m.Shards)),
			// No retries: a shard that fails fails its index, and one
			// failed index fails the Job (the run is invalid).
			BackoffLimitPerIndex: ptr(int32(0)),
			MaxFailedIndexes:     ptr(int32(0)),
			// Never two pods of one index at once.
			PodReplacementPolicy:  &replace,
			ActiveDeadlineSeconds: ptr(int64(math.Ceil(m.Deadline.Seconds()))),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       m.podSpec(),
			},
		},
	}
	return svc, job
}

func (m *Manifest) podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		Subdomain:                     m.Name,     // the Service: <job>-<k>.<service> resolves
		AutomountServiceAccountToken:  ptr(false), // a shard never calls the API
		TerminationGracePeriodSeconds: ptr(int64(30)),
		// Spread the shards over the nodes: N shards, N machines' load.
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelRun: m.Name}},
					TopologyKey:   corev1.LabelHostname,
				},
			}},
		}},
		Containers: []corev1.Container{{
			Name:    Container,
			Image:   m.Image,
			Command: m.ShardCommand(),
			Ports:   []corev1.ContainerPort{{Name: "barrier", ContainerPort: BarrierPort, Protocol: corev1.ProtocolTCP}},
			// A failed shard's last log lines (its error) become its
			// termination message, which collect shows.
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			Resources:                m.resources(),
			// The spool of the requests and answers goes to TMPDIR: the
			// emptyDir too, writable whatever the image's root filesystem.
			Env:          append([]corev1.EnvVar{{Name: "TMPDIR", Value: runDir}}, m.secretEnv()...),
			VolumeMounts: []corev1.VolumeMount{{Name: "run", MountPath: runDir}},
		}},
		Volumes: []corev1.Volume{{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
}

// Write checks the objects against the rules of Kubernetes's validation
// the manifest relies on (Check) and writes them to w as one YAML stream:
// the Service, then the Job.
func (m *Manifest) Write(w io.Writer) error {
	svc, job := m.Objects()
	if err := Check(svc, job); err != nil {
		return fmt.Errorf("k8s manifest: %w", err)
	}
	var buf bytes.Buffer
	for i, obj := range []any{svc, job} {
		b, err := marshal(obj)
		if err != nil {
			return fmt.Errorf("k8s manifest: %w", err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// marshal is the object as YAML without its (empty) status, which only
// the API server fills.
func marshal(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	return yaml.Marshal(m)
}

func ptr[T any](v T) *T { return &v }
