package k8s

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/replaykit/replay/internal/runlog"
	"github.com/replaykit/replay/shard"
)

// CollectConfig is one collection of a Job's shards.
type CollectConfig struct {
	Cluster   Cluster
	Namespace string
	Job       string
	Out       string // the merged run file to write (must not exist)
	// Merge merges the shards' run files; nil: shard.Merge.
	Merge func(ctx context.Context, out string, runs []string) error
}

// Collected says what Collect did.
type Collected struct {
	Shards   int   // N
	LogBytes int64 // the run files' encoded size in the logs, all shards
	RunBytes int64 // the shards' run files, decoded
}

// ErrNotFinished: the Job is still running.
var ErrNotFinished = errors.New("the job has not finished")

// Collect reads the run file each shard of the Job printed at the end of
// its log, checks that every shard 0..N-1 is there, succeeded and is
// shard k of N of one plan, and merges them into c.Out. A failed shard is
// an error naming its pod and why it failed (the run is invalid), and so
// is a Job that failed or has not finished.
func Collect(ctx context.Context, c CollectConfig) (Collected, error) {
	if c.Merge == nil {
		c.Merge = shard.Merge
	}
	job, err := c.Cluster.Job(ctx, c.Namespace, c.Job)
	if apierrors.IsNotFound(err) {
		return Collected{}, fmt.Errorf("collect: no job %q in namespace %q", c.Job, c.Namespace)
	}
	if err != nil {
		return Collected{}, fmt.Errorf("collect: %w", err)
	}
	if job.Spec.Completions == nil || job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		return Collected{}, fmt.Errorf("collect: job %s is not an Indexed Job with completions (made by replay k8s manifest?)", c.Job)
	}
	n := int(*job.Spec.Completions)
	pods, err := c.Cluster.Pods(ctx, c.Namespace, LabelJobName+"="+c.Job)
	if err != nil {
		return Collected{}, fmt.Errorf("collect: pods of job %s: %w", c.Job, err)
	}
	byShard, err := shardPods(job, pods, n)
	if err != nil {
		return Collected{}, fmt.Errorf("collect: job %s: %w", c.Job, err)
	}
	dir, err := os.MkdirTemp("", "replay-collect-")
	if err != nil {
		return Collected{}, fmt.Errorf("collect: %w", err)
	}
	defer os.RemoveAll(dir)
	res := Collected{Shards: n}
	runs := make([]string, n)
	for k, pod := range byShard {
		runs[k] = filepath.Join(dir, fmt.Sprintf("shard-%d.run", k))
		st, err := c.fetch(ctx, pod, runs[k])
		if err != nil {
			return res, fmt.Errorf("collect: pod %s (shard %d/%d): %w", pod.Name, k, n, err)
		}
		res.LogBytes += st.Encoded
		res.RunBytes += st.Bytes
		if gk, gn, _, ok := shard.Info(runs[k]); !ok || gk != k || gn != n {
			return res, fmt.Errorf("collect: pod %s is shard %d/%d of the job, but its run file is %s", pod.Name, k, n, shardName(gk, gn, ok))
		}
	}
	if err := c.Merge(ctx, c.Out, runs); err != nil {
		return res, fmt.Errorf("collect: %w", err)
	}
	return res, nil
}

func shardName(k, n int, ok bool) string {
	if !ok {
		return "no shard's (no shard tags)"
	}
	return fmt.Sprintf("shard %d/%d", k, n)
}

// fetch decodes the run file at the end of the pod's log into path.
func (c CollectConfig) fetch(ctx context.Context, pod *corev1.Pod, path string) (runlog.Stats, error) {
	rc, err := c.Cluster.Log(ctx, c.Namespace, pod.Name, Container)
	if err != nil {
		return runlog.Stats{}, fmt.Errorf("reading its log: %w", err)
	}
	defer rc.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return runlog.Stats{}, err
	}
	st, err := runlog.Decode(rc, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, runlog.ErrNoRun) || errors.Is(err, runlog.ErrCut) {
		err = fmt.Errorf("%w; a log over the kubelet's containerLogMaxSize (10Mi by default) is rotated and loses its start: use more shards", err)
	}
	return st, err
}

// shardPods picks shard k's pod for every k < n: the pod of index k that
// succeeded. A failed pod, a Job that failed or is still running, a shard
// without a pod and two succeeded pods of one shard are errors.
func shardPods(job *batchv1.Job, pods []corev1.Pod, n int) ([]*corev1.Pod, error) {
	byShard := make([]*corev1.Pod, n)
	var failed, running, errs []string
	for i := range pods {
		p := &pods[i]
		k, err := podIndex(p)
		if err != nil || k >= n {
			errs = append(errs, fmt.Sprintf("pod %s: no completion index below %d (%v)", p.Name, n, err))
			continue
		}
		switch p.Status.Phase {
		case corev1.PodFailed:
			failed = append(failed, fmt.Sprintf("pod %s (shard %d/%d) failed: %s", p.Name, k, n, failure(p)))
		case corev1.PodSucceeded:
			if byShard[k] != nil {
				errs = append(errs, fmt.Sprintf("shard %d/%d succeeded twice: pods %s and %s", k, n, byShard[k].Name, p.Name))
			}
			byShard[k] = p
		default:
			running = append(running, fmt.Sprintf("%s (shard %d, %s)", p.Name, k, p.Status.Phase))
		}
	}
	slices.Sort(failed)
	errs = append(failed, errs...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("the run is invalid: %s", strings.Join(errs, "; "))
	}
	if c := jobCondition(job, batchv1.JobFailed); c != nil {
		return nil, fmt.Errorf("the run is invalid: the job failed: %s: %s", c.Reason, c.Message)
	}
	if len(running) > 0 {
		slices.Sort(running)
		return nil, fmt.Errorf("%w: pods %s (wait: kubectl wait --for=condition=complete job/%s -n %s)",
			ErrNotFinished, strings.Join(running, ", "), job.Name, job.Namespace)
	}
	var missing []string
	for k, p := range byShard {
		if p == nil {
			missing = append(missing, strconv.Itoa(k))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the run is invalid: no succeeded pod for shard %s of %d (deleted, or never scheduled?)", strings.Join(missing, ", "), n)
	}
	return byShard, nil
}

// podIndex is the pod's completion index, from its annotation (or label).
func podIndex(p *corev1.Pod) (int, error) {
	v, ok := p.Annotations[LabelIndex]
	if !ok {
		v, ok = p.Labels[LabelIndex]
	}
	if !ok {
		return 0, fmt.Errorf("no %s annotation", LabelIndex)
	}
	k, err := strconv.Atoi(v)
	if err != nil || k < 0 {
		return 0, fmt.Errorf("%s %q", LabelIndex, v)
	}
	return k, nil
}

// failure says why a pod failed: its container's exit code, reason and
// last lines (the termination message), or the pod's reason.
func failure(p *corev1.Pod) string {
	var parts []string
	if p.Status.Reason != "" {
		parts = append(parts, p.Status.Reason)
	}
	if p.Status.Message != "" {
		parts = append(parts, p.Status.Message)
	}
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if cs.Name != Container || t == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("exit code %d", t.ExitCode))
		if t.Reason != "" {
			parts = append(parts, t.Reason)
		}
		if msg := strings.TrimSpace(t.Message); msg != "" {
			lines := strings.Split(msg, "\n")
			parts = append(parts, strconv.Quote(lines[len(lines)-1]))
		}
	}
	if len(parts) == 0 {
		return "no reason given"
	}
	return strings.Join(parts, ", ")
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}
