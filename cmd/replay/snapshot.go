package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newCmdSnapshot(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "snapshot",
		Short: "(not built yet)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("snapshot: not built yet") },
	}
}
