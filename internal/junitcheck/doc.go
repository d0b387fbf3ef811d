// Package junitcheck checks JUnit XML against the junit-10 schema that
// Jenkins' xUnit plugin validates reports with, for tests: Check applies
// the schema's rules (and a few stricter ones CI reporters rely on) in Go,
// with no tool installed; XMLLint validates against the schema itself
// (junit-10.xsd, vendored from github.com/jenkinsci/xunit-plugin, MIT)
// with xmllint when it is installed (Debian: libxml2-utils).
//
// The replay binary does not link it: only tests import it.
package junitcheck
