package main

import (
	"github.com/spf13/cobra"

	"github.com/replaykit/replay/shard"
)

// newCmdMerge is `replay merge RUN... --out RUN`: shard.Merge.
func newCmdMerge() *cobra.Command {
	var out string
	cmd := &cobra.Command{Use: "merge RUN... --out RUN", Args: cobra.MinimumNArgs(1), Long: longHelp("merge"),
		Short: "Merge the run files of one plan's shards (replay run --shard k/N) into one run file, exactly",
		RunE:  func(cmd *cobra.Command, args []string) error { return shard.Merge(cmd.Context(), out, args) }}
	cmd.Flags().StringVar(&out, "out", "", "run `FILE` to create (must not exist); then replay report FILE")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
