package k8s

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// AddFlags registers the flags of `replay k8s manifest` on f, with their
// defaults.
func (m *Manifest) AddFlags(f *pflag.FlagSet) {
	f.IntVar(&m.Shards, "shards", 0, "`N` shards: N pods at once, pod k running shard k of N of the plan (required)")
	f.StringVar(&m.Image, "image", "", "container `IMAGE` with replay on its PATH (and the snapshot the run flags name) (required)")
	f.StringVar(&m.Namespace, "namespace", "default", "`NS` the Service and the Job are made in")
	f.StringVar(&m.Name, "name", "replay", "`NAME` of the Job and the Service; shard k's pod is NAME-k.NAME in DNS")
	f.DurationVar(&m.Deadline, "deadline", time.Hour, "the Job's activeDeadlineSeconds: Kubernetes stops every shard `D` after the Job starts")
	f.StringVar(&m.CPU, "cpu", "", "each shard's CPU request and limit, e.g. 2 or 1500m (`Q`; default none)")
	f.StringVar(&m.Memory, "memory", "", "each shard's memory request and limit, e.g. 512Mi (`Q`; default none)")
	f.StringVar(&m.ClientSecret, "oauth2-client-secret-k8s-secret", "", "Kubernetes Secret `NAME[:KEY]` holding the OAuth2 client secret of a run with --oauth2-token-url (key default "+DefaultSecretKey+"): the shards' environment takes it from there, never a literal")
}

// Parse sets the manifest from a command line: its own flags (those of
// own, registered by AddFlags) wherever they are before "--", every other
// argument, and all after "--", as RunArgs (the flags of replay run). So
// both `--shards 3 --image I --snapshot S` and `--shards 3 --image I --
// --snapshot S` work; a run flag of the same name as one of the manifest's
// (--name) goes after "--". It returns pflag.ErrHelp for -h/--help, and
// then Validate's errors.
func (m *Manifest) Parse(own *pflag.FlagSet, args []string) error {
	var mine []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			m.RunArgs = append(m.RunArgs, args[i+1:]...)
			break
		}
		f := ownFlag(own, a)
		if f == nil {
			m.RunArgs = append(m.RunArgs, a)
			continue
		}
		mine = append(mine, a)
		if !strings.Contains(a, "=") && f.NoOptDefVal == "" && i+1 < len(args) {
			mine = append(mine, args[i+1])
			i++
		}
	}
	if err := own.Parse(mine); err != nil {
		return fmt.Errorf("k8s manifest: %w", err)
	}
	if h, err := own.GetBool("help"); err == nil && h {
		return pflag.ErrHelp
	}
	return m.Validate()
}

// ownFlag is the flag of own that the argument a names, or nil.
func ownFlag(own *pflag.FlagSet, a string) *pflag.Flag {
	name, _, _ := strings.Cut(a, "=")
	switch {
	case strings.HasPrefix(name, "--"):
		return own.Lookup(name[2:])
	case len(name) == 2 && name[0] == '-':
		return own.ShorthandLookup(name[1:])
	}
	return nil
}
