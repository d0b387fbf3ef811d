package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newCmdCA(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "ca",
		Short: "(not built yet)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("ca: not built yet") },
	}
}
