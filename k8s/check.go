package k8s

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Name rules, as Kubernetes's validation applies them (the functions are
// apimachinery's own).
var (
	dns1123Label     = validation.IsDNS1123Label
	dns1035Label     = validation.IsDNS1035Label
	dns1123Subdomain = validation.IsDNS1123Subdomain
)

// nameErrors gives the errors of a name under a rule, for the flag that
// set it.
func nameErrors(flag, name string, rule func(string) []string) []string {
	var out []string
	for _, e := range rule(name) {
		out = append(out, fmt.Sprintf("%s %q: %s", flag, name, e))
	}
	return out
}

// parseQuantity parses a resource quantity ("500m", "2", "1Gi"); empty is
// none.
func parseQuantity(s string) (*resource.Quantity, error) {
	if s == "" {
		return nil, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil, errors.New("want a Kubernetes quantity such as 500m, 2 or 1Gi")
	}
	if q.Sign() <= 0 {
		return nil, errors.New("want more than zero")
	}
	return &q, nil
}

// resources are the container's requests and limits: the same, so a
// shard has its CPU to itself (Guaranteed when both are given).
func (m *Manifest) resources() corev1.ResourceRequirements {
	rl := corev1.ResourceList{}
	if q, _ := parseQuantity(m.CPU); q != nil {
		rl[corev1.ResourceCPU] = *q
	}
	if q, _ := parseQuantity(m.Memory); q != nil {
		rl[corev1.ResourceMemory] = *q
	}
	if len(rl) == 0 {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
}

// Check checks a Service and an Indexed Job made by Objects against the
// rules of Kubernetes's API validation (apps, batch and core) that they
// rely on, and against the manifest's own invariants: the Job runs N
// shards at once with no retries, the Service is headless and selects the
// Job's pods, the pods' subdomain is the Service, and every shard is
// given the barrier at shard 0's name. An API server would refuse a
// manifest breaking the first kind; the second would run, wrongly.
func Check(svc *corev1.Service, job *batchv1.Job) error {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	for _, e := range dns1035Label(svc.Name) {
		add("service name %q: %s", svc.Name, e)
	}
	for _, e := range dns1123Subdomain(job.Name) {
		add("job name %q: %s", job.Name, e)
	}
	for _, e := range validation.IsValidLabelValue(job.Name) { // the pods' job-name label
		add("job name %q: %s", job.Name, e)
	}
	for _, ns := range []string{svc.Namespace, job.Namespace} {
		for _, e := range dns1123Label(ns) {
			add("namespace %q: %s", ns, e)
		}
	}
	if svc.Namespace != job.Namespace {
		add("the service is in namespace %q, the job in %q", svc.Namespace, job.Namespace)
	}
	errs = append(errs, checkService(svc)...)
	errs = append(errs, checkJob(job)...)
	errs = append(errs, checkPod(&job.Spec.Template.Spec)...)
	errs = append(errs, checkTogether(svc, job)...)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func checkService(svc *corev1.Service) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		add("service clusterIP %q: want None (headless)", svc.Spec.ClusterIP)
	}
	if !svc.Spec.PublishNotReadyAddresses {
		add("service publishNotReadyAddresses: want true (the barrier's name must resolve before the shards are ready)")
	}
	if len(svc.Spec.Selector) == 0 {
		add("service selector: empty")
	}
	errs = append(errs, checkLabels("service selector", svc.Spec.Selector)...)
	for _, p := range svc.Spec.Ports {
		for _, e := range validation.IsValidPortNum(int(p.Port)) {
			add("service port %d: %s", p.Port, e)
		}
		for _, e := range validation.IsValidPortName(p.Name) {
			add("service port name %q: %s", p.Name, e)
		}
	}
	return errs
}

func checkJob(job *batchv1.Job) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		add("job completionMode: want Indexed")
	}
	switch {
	case s.Completions == nil:
		add("job completions: required when completionMode is Indexed")
	case s.Parallelism == nil || *s.Parallelism != *s.Completions:
		add("job parallelism: want completions (%d): every shard runs at once", *s.Completions)
	case *s.Completions < 1 || *s.Completions > MaxShards:
		add("job completions %d: want 1 to %d (an Indexed Job's parallelism is at most 10^5)", *s.Completions, MaxShards)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 {
		add("job backoffLimitPerIndex: want 0 (a shard is never retried)")
	}
	if s.MaxFailedIndexes == nil || *s.MaxFailedIndexes != 0 {
		add("job maxFailedIndexes: want 0 (one failed shard fails the run)")
	}
	if s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds <= 0 {
		add("job activeDeadlineSeconds: want a positive number")
	}
	if s.PodReplacementPolicy == nil || *s.PodReplacementPolicy != batchv1.Failed {
		add("job podReplacementPolicy: want Failed (never two pods of one shard)")
	}
	if s.Selector != nil || s.ManualSelector != nil {
		add("job selector: leave it to the Job controller")
	}
	if rp := s.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyNever {
		// Kubernetes allows OnFailure for Jobs, but not with backoffLimitPerIndex.
		add("pod restartPolicy %q: want Never (backoffLimitPerIndex requires it)", rp)
	}
	errs = append(errs, checkLabels("pod labels", s.Template.Labels)...)
	return errs
}

func checkLabels(what string, ls map[string]string) []string {
	var errs []string
	for k, v := range ls {
		for _, e := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Sprintf("%s key %q: %s", what, k, e))
		}
		for _, e := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Sprintf("%s value %q: %s", what, v, e))
		}
	}
	return errs
}

func checkPod(p *corev1.PodSpec) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	for _, e := range dns1123Label(p.Subdomain) {
		add("pod subdomain %q: %s", p.Subdomain, e)
	}
	volumes := map[string]bool{}
	for _, v := range p.Volumes {
		for _, e := range dns1123Label(v.Name) {
			add("volume name %q: %s", v.Name, e)
		}
		volumes[v.Name] = true
	}
	if len(p.Containers) != 1 {
		add("pod containers: %d, want one", len(p.Containers))
		return errs
	}
	c := p.Containers[0]
	for _, e := range dns1123Label(c.Name) {
		add("container name %q: %s", c.Name, e)
	}
	if c.Image == "" || strings.TrimSpace(c.Image) != c.Image {
		add("container image %q: want a reference without surrounding spaces", c.Image)
	}
	for _, port := range c.Ports {
		for _, e := range validation.IsValidPortNum(int(port.ContainerPort)) {
			add("container port %d: %s", port.ContainerPort, e)
		}
		for _, e := range validation.IsValidPortName(port.Name) {
			add("container port name %q: %s", port.Name, e)
		}
	}
	for _, vm := range c.VolumeMounts {
		if !volumes[vm.Name] {
			add("volume mount %q: no such volume", vm.Name)
		}
	}
	for name, req := range c.Resources.Requests {
		if lim, ok := c.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
			add("container %s request %s: over its limit %s", name, req.String(), lim.String())
		}
	}
	return errs
}

// checkTogether checks what ties the Service, the Job and the shards'
// command lines together.
func checkTogether(svc *corev1.Service, job *batchv1.Job) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	pod := job.Spec.Template
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
		add("service selector %v does not select the job's pods (labels %v)", svc.Spec.Selector, pod.Labels)
	}
	if pod.Spec.Subdomain != svc.Name {
		add("pod subdomain %q: want the service's name %q", pod.Spec.Subdomain, svc.Name)
	}
	if job.Spec.Completions == nil || len(pod.Spec.Containers) != 1 || len(svc.Spec.Ports) != 1 {
		return errs
	}
	n := int(*job.Spec.Completions)
	if h := hostname(job.Name, n-1); len(h) > 63 {
		add("the last shard's hostname %q: %d characters, over 63", h, len(h))
	}
	c := pod.Spec.Containers[0]
	port := svc.Spec.Ports[0].Port
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == port }) ||
		svc.Spec.Ports[0].TargetPort.IntValue() != int(port) {
		add("service port %d: not the container's barrier port", port)
	}
	want := map[string]string{
		"--shard":   "/" + strconv.Itoa(n),
		"--barrier": fmt.Sprintf("%s.%s:%d", hostname(job.Name, 0), svc.Name, port),
		"--out":     RunPath,
	}
	cmd := c.Command
	if len(cmd) < 2 || cmd[0] != "replay" || cmd[1] != "run" {
		add("container command %q: want replay run", cmd)
	}
	for flag, v := range want {
		if i := slices.Index(cmd, flag); i < 0 || i+1 >= len(cmd) || cmd[i+1] != v {
			add("container command: want %s %s", flag, v)
		}
	}
	if !slices.Contains(cmd, "--print-run") {
		add("container command: want --print-run (collect reads the run file from the log)")
	}
	return errs
}
