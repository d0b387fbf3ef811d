package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newCmdRecord(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "record",
		Short: "(not built yet)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("record: not built yet") },
	}
}
