package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/shard"
	"github.com/replaykit/replay/snapshots"
)

// newCmdMerge is `replay merge RUN... --out RUN`: shard.Merge.
func newCmdMerge(s streams) *cobra.Command {
	var out string
	cmd := &cobra.Command{Use: "merge RUN... --out RUN", Args: minArgs(1, "the shards' run files"), Long: longHelp("merge"),
		Short: "Merge the run files of one plan's shards (replay run --shard k/N) into one run file, exactly",
		RunE:  func(cmd *cobra.Command, args []string) error { return mergeRun(cmd.Context(), out, args, s) }}
	cmd.Flags().StringVar(&out, "out", "", "run `FILE` to create (must not exist); then replay report FILE")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// mergeRun merges runs into out and says what it merged, as k8s collect
// does, on stderr.
func mergeRun(ctx context.Context, out string, runs []string, s streams) error {
	if err := shard.Merge(ctx, out, runs); err != nil {
		return err
	}
	r, err := snapshots.OpenRun(out)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	defer r.Close()
	n, err := r.Count(ctx)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	fmt.Fprintf(s.err, "replay: merged %s (%s) into %s\n", plural(int64(len(runs)), "run file"), plural(n, "request"), out)
	return nil
}
