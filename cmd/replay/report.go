package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newCmdReport(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "report",
		Short: "(not built yet)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("report: not built yet") },
	}
}
