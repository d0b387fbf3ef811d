package junitcheck

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Schema is junit-10.xsd from Jenkins' xUnit plugin
// (src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/,
// commit 8c515de2804b3fd591a3b0f1ff8908a1b1a41887), MIT licence, notice in
// the file.
//
//go:embed junit-10.xsd
var Schema []byte

// ErrNoXMLLint is XMLLint's error when xmllint is not installed.
var ErrNoXMLLint = errors.New("xmllint not installed (Debian package libxml2-utils)")

// XMLLint validates doc against Schema with `xmllint --schema`; the
// error holds xmllint's complaints. ErrNoXMLLint when it is not on PATH.
func XMLLint(ctx context.Context, doc []byte) error {
	bin, err := exec.LookPath("xmllint")
	if err != nil {
		return ErrNoXMLLint
	}
	dir, err := os.MkdirTemp("", "junitcheck-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	xsd, file := filepath.Join(dir, "junit-10.xsd"), filepath.Join(dir, "report.xml")
	if err := os.WriteFile(xsd, Schema, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		return err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--noout", "--nonet", "--schema", xsd, file)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("xmllint: %w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}
