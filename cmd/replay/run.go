package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newCmdRun(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "(not built yet)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("run: not built yet") },
	}
}
