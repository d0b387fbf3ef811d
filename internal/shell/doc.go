// Package shell writes text that a POSIX shell reads back as it was meant:
// Quote makes a word of any string, for the command lines and export lines
// that replay prints for a user to paste or eval.
//
// It does not parse shell syntax or run commands.
package shell
