package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newCmdSQLCount(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "sqlcount",
		Short: "(not built yet)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("sqlcount: not built yet") },
	}
}
