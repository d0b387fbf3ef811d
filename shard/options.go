package shard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// IndexEnv is the environment variable a Kubernetes Indexed Job sets to
// the pod's index: `--shard /N` takes k from it.
const IndexEnv = "JOB_COMPLETION_INDEX"

// Options are the shard flags of `replay run` and `replay compare`.
type Options struct {
	// Shard is --shard "k/N", or "/N" for k from IndexEnv.
	Shard string
	// Barrier is --barrier HOST:PORT, shard 0's address.
	Barrier string
	// Wait is --barrier-timeout.
	Wait time.Duration
	// Shards and Local are --shards N --local: N shard processes here.
	Shards int
	Local  bool
}

// AddFlags registers the flags on f.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Shard, "shard", "", "run shard `k/N` of the plan (\"/N\": k from $JOB_COMPLETION_INDEX); merge the shards' run files with replay merge")
	f.StringVar(&o.Barrier, "barrier", "", "with --shard: `HOST:PORT` of shard 0, where the shards meet and start together (shard 0 listens on its port)")
	f.DurationVar(&o.Wait, "barrier-timeout", DefaultWait, "with --barrier: how long shard 0 waits for the others, and they for it (`D`)")
	f.IntVar(&o.Shards, "shards", 0, "with --local: run the plan as `N` shard processes on this machine and merge them")
	f.BoolVar(&o.Local, "local", false, "with --shards N: the shards run here, as child processes, with the barrier on loopback")
}

// ErrUsage marks a bad combination or value of the flags (errors.Is).
var ErrUsage = errors.New("bad shard flags")

// usageError is an ErrUsage that reads as its message alone.
type usageError string

func (e usageError) Error() string        { return string(e) }
func (e usageError) Is(target error) bool { return target == ErrUsage }

func usage(format string, args ...any) error { return usageError(fmt.Sprintf(format, args...)) }

// Setup validates the flags into the shard's barrier (nil: the whole plan,
// or --local, which Local runs); getenv reads IndexEnv. Its errors wrap
// ErrUsage and read as one line naming the flags.
func (o *Options) Setup(getenv func(string) string) (*Barrier, error) {
	switch {
	case o.Local && o.Shards < 1:
		return nil, usage("--local needs --shards N (N ≥ 1)")
	case o.Shards != 0 && !o.Local:
		return nil, usage("--shards %d needs --local (on a cluster: replay k8s manifest --shards N)", o.Shards)
	case o.Local && o.Shard != "":
		return nil, usage("--shard and --shards --local: give one")
	case o.Barrier != "" && o.Shard == "":
		return nil, usage("--barrier needs --shard k/N")
	case o.Wait <= 0:
		return nil, usage("--barrier-timeout %s: want a positive duration", o.Wait)
	}
	if o.Shard == "" {
		return nil, nil
	}
	s, err := ParseSpec(o.Shard, getenv)
	if err != nil {
		return nil, err
	}
	return &Barrier{Spec: s, Addr: o.Barrier, Wait: o.Wait}, nil
}

// ParseSpec reads "k/N", or "/N" with k from IndexEnv (getenv).
func ParseSpec(v string, getenv func(string) string) (Spec, error) {
	ks, ns, ok := strings.Cut(v, "/")
	if !ok {
		return Spec{}, usage("--shard %q: want k/N, e.g. 0/3, or /N with $%s", v, IndexEnv)
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 {
		return Spec{}, usage("--shard %q: N must be a whole number ≥ 1", v)
	}
	from := "k"
	if ks == "" {
		ks, from = getenv(IndexEnv), "$"+IndexEnv
		if ks == "" {
			return Spec{}, usage("--shard %q: no k, and $%s is not set", v, IndexEnv)
		}
	}
	k, err := strconv.Atoi(ks)
	if err != nil || k < 0 || k >= n {
		return Spec{}, usage("--shard %q: %s %q must be a whole number from 0 to %d", v, from, ks, n-1)
	}
	return Spec{K: k, N: n}, nil
}

// LocalShards is the Local of --shards N --local, with args the command's
// as given (this binary runs them); nil without --local.
func (o *Options) LocalShards(args []string) *Local {
	if !o.Local {
		return nil
	}
	return &Local{Args: args, N: o.Shards}
}
