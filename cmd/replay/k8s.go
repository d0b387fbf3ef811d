package main

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/replaykit/replay/k8s"
)

func newCmdK8s(s streams) *cobra.Command {
	cmd := &cobra.Command{Use: "k8s", Short: "Run a sharded replay on Kubernetes: print its manifest, collect its results", Long: longHelp("k8s")}
	var m k8s.Manifest
	manifest := &cobra.Command{Use: "manifest --shards N --image IMAGE [--namespace NS] [--deadline D] [--] RUN FLAGS...",
		Short: "Print a headless Service and an Indexed Job running the shards of a replay run", Long: longHelp("k8s-manifest"),
		DisableFlagParsing: true, // k8s.Manifest.Parse splits its flags from run's
		RunE: func(c *cobra.Command, args []string) error {
			m.RunFlags = newCmdRun(s).Flags()
			if err := m.Parse(c.Flags(), args); errors.Is(err, pflag.ErrHelp) {
				return c.Help()
			} else if err != nil {
				return usageError{err}
			}
			return m.Write(s.out)
		}}
	m.AddFlags(manifest.Flags())
	var co k8s.CollectOptions
	collect := &cobra.Command{Use: "collect [--namespace NS] [--job NAME] --out FILE", Args: exactArgs(0),
		Short: "Read the shards' run files from the Job's pod logs, check every shard is there, and merge them", Long: longHelp("k8s-collect"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := co.Validate(); err != nil {
				return usageError{err}
			}
			return co.Run(c.Context(), s.err)
		}}
	co.AddFlags(collect.Flags())
	cmd.AddCommand(manifest, collect)
	return cmd
}
