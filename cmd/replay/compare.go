package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newCmdCompare(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "compare",
		Short: "(not built yet)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("compare: not built yet") },
	}
}
