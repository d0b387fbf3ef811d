package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
)

// CollectOptions are the flags of `replay k8s collect`.
type CollectOptions struct {
	Namespace, Job, Out string
	// Kubeconfig and Context pick the cluster as kubectl does: empty
	// Kubeconfig follows $KUBECONFIG, then ~/.kube/config, then the
	// in-cluster account; empty Context is the file's current one.
	Kubeconfig, Context string
}

// AddFlags registers the flags of `replay k8s collect` on f.
func (o *CollectOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Namespace, "namespace", "default", "`NS` of the Job")
	f.StringVar(&o.Job, "job", "replay", "`NAME` of the Job (replay k8s manifest's --name)")
	f.StringVar(&o.Out, "out", "", "merged run `FILE` to create (must not exist) (required)")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default $KUBECONFIG, ~/.kube/config, or in-cluster)")
	f.StringVar(&o.Context, "context", "", "kubeconfig `CONTEXT` to use (default the current one)")
}

// Validate checks the options; its errors are usage errors.
func (o *CollectOptions) Validate() error {
	var errs []string
	if o.Out == "" {
		errs = append(errs, "--out FILE is required")
	}
	errs = append(errs, nameErrors("--namespace", o.Namespace, dns1123Label)...)
	errs = append(errs, nameErrors("--job", o.Job, dns1123Subdomain)...)
	if len(errs) > 0 {
		return errors.New("k8s collect: " + strings.Join(errs, "; "))
	}
	return nil
}

// Run connects to the cluster, collects the Job's shards into Out and
// tells notes what it merged.
func (o *CollectOptions) Run(ctx context.Context, notes io.Writer) error {
	if _, err := os.Stat(o.Out); err == nil {
		return fmt.Errorf("k8s collect: %s exists (the merged run file must not)", o.Out)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return fmt.Errorf("k8s collect: %w", err)
	}
	cluster, err := NewCluster(cfg)
	if err != nil {
		return fmt.Errorf("k8s collect: %w", err)
	}
	res, err := Collect(ctx, CollectConfig{Cluster: cluster, Namespace: o.Namespace, Job: o.Job, Out: o.Out})
	if err != nil {
		return err
	}
	fmt.Fprintf(notes, "replay: merged %d shards of job %s (%s of logs, %s of run files) into %s\n",
		res.Shards, o.Job, size(res.LogBytes), size(res.RunBytes), o.Out)
	return nil
}

// size is a byte count for people: 1.2 MB.
func size(n int64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d bytes", n)
}
