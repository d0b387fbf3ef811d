package junitcheck

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// element is one parsed XML element: its attributes, child elements and
// whether it held text other than white space.
type element struct {
	name     string
	attrs    map[string]string
	children []*element
	text     bool
}

// The rules, per element: the attributes junit-10 allows, those it (or
// Check, stricter) requires, and the child elements it allows.
var (
	allowedAttrs = map[string][]string{
		"testsuites": {"name", "time", "tests", "failures", "errors"},
		"testsuite": {"name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp", "hostname",
			"id", "package", "file", "log", "url", "version"},
		"testcase":   {"name", "time", "classname", "group"},
		"failure":    {"type", "message"},
		"error":      {"type", "message"},
		"skipped":    {"type", "message"},
		"property":   {"name", "value"},
		"properties": {},
		"system-out": {},
		"system-err": {},
	}
	// requiredAttrs: junit-10 requires name, tests, failures and errors on
	// a suite and name on a case; Check also wants skipped and time on a
	// suite, classname and time on a case (GitLab and GitHub reporters
	// show them).
	requiredAttrs = map[string][]string{
		"testsuite": {"name", "tests", "failures", "errors", "skipped", "time"},
		"testcase":  {"name", "classname", "time"},
		"property":  {"name", "value"},
	}
	allowedChildren = map[string][]string{
		"testsuites": {"testsuite"},
		"testsuite":  {"testsuite", "properties", "testcase", "system-out", "system-err"},
		"testcase": {"skipped", "error", "failure", "rerunFailure", "rerunError", "flakyFailure", "flakyError",
			"system-out", "system-err"},
		"properties": {"property"},
	}
	// elementOnly are the elements whose content is elements alone.
	elementOnly = []string{"testsuites", "testsuite", "testcase", "properties"}

	// surefireTime is junit-10's SUREFIRE_TIME, anchored.
	surefireTime = regexp.MustCompile(`^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?$`)
	// isoTime is a timestamp as Ant and Surefire write it.
	isoTime = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$`)
)

// Check reports every way doc breaks the rules (nil when it keeps them):
// the root is <testsuites>; every element has only the attributes and
// children junit-10 allows and the attributes it requires; times are
// SUREFIRE_TIME seconds; a suite's counts are those of its cases and the
// root's the sums of its suites'; a case is at most one of failed, in
// error or skipped.
func Check(doc []byte) error {
	root, err := parse(doc)
	if err != nil {
		return err
	}
	if root.name != "testsuites" {
		return fmt.Errorf("root element <%s>, want <testsuites>", root.name)
	}
	var errs []error
	walk(root, root.name, &errs)
	var sum counts
	for _, s := range root.children {
		c, err := suiteCounts(s)
		if err != nil {
			errs = append(errs, err)
		}
		sum = sum.plus(c)
	}
	for attr, want := range map[string]int{"tests": sum.tests, "failures": sum.failures, "errors": sum.errors} {
		if v, ok := root.attrs[attr]; ok && v != strconv.Itoa(want) {
			errs = append(errs, fmt.Errorf("<testsuites> %s=%q, want %d (the sum of its suites')", attr, v, want))
		}
	}
	return errors.Join(errs...)
}

// walk checks e's attributes, children and text, then its children's.
func walk(e *element, where string, errs *[]error) {
	addf := func(format string, a ...any) { *errs = append(*errs, fmt.Errorf(where+": "+format, a...)) }
	allowed, known := allowedAttrs[e.name]
	if !known {
		addf("element <%s> is not in the schema", e.name)
		return
	}
	for a, v := range e.attrs {
		if !slices.Contains(allowed, a) {
			addf("attribute %s=%q not allowed on <%s>", a, v, e.name)
		}
	}
	for _, a := range requiredAttrs[e.name] {
		if _, ok := e.attrs[a]; !ok {
			addf("<%s> lacks attribute %s", e.name, a)
		}
	}
	if t, ok := e.attrs["time"]; ok && !surefireTime.MatchString(t) {
		addf("time=%q is not seconds with at most 3 decimals", t)
	}
	if t, ok := e.attrs["timestamp"]; ok && !isoTime.MatchString(t) {
		addf("timestamp=%q is not YYYY-MM-DDThh:mm:ss", t)
	}
	if e.text && slices.Contains(elementOnly, e.name) {
		addf("<%s> holds text", e.name)
	}
	outcomes := 0
	for _, c := range e.children {
		if !slices.Contains(allowedChildren[e.name], c.name) {
			addf("<%s> not allowed in <%s>", c.name, e.name)
			continue
		}
		if c.name == "failure" || c.name == "error" || c.name == "skipped" {
			outcomes++
		}
		walk(c, where+"/"+c.name+name(c), errs)
	}
	if outcomes > 1 {
		addf("test case has %d outcomes (failure, error, skipped), want at most 1", outcomes)
	}
}

func name(e *element) string {
	if n, ok := e.attrs["name"]; ok {
		return fmt.Sprintf("[%q]", n)
	}
	return ""
}

type counts struct{ tests, failures, errors, skipped int }

func (c counts) plus(d counts) counts {
	return counts{c.tests + d.tests, c.failures + d.failures, c.errors + d.errors, c.skipped + d.skipped}
}

// suiteCounts counts the cases of suite s (nested suites included) and
// checks that its attributes say the same.
func suiteCounts(s *element) (counts, error) {
	var c counts
	var errs []error
	for _, x := range s.children {
		switch x.name {
		case "testsuite":
			n, err := suiteCounts(x)
			errs = append(errs, err)
			c = c.plus(n)
		case "testcase":
			c.tests++
			for _, o := range x.children {
				switch o.name {
				case "failure":
					c.failures++
				case "error":
					c.errors++
				case "skipped":
					c.skipped++
				}
			}
		}
	}
	for attr, want := range map[string]int{"tests": c.tests, "failures": c.failures, "errors": c.errors, "skipped": c.skipped} {
		if v, ok := s.attrs[attr]; ok && v != strconv.Itoa(want) {
			errs = append(errs, fmt.Errorf("testsuite%s: %s=%q, want %d (its cases')", name(s), attr, v, want))
		}
	}
	return c, errors.Join(errs...)
}

// parse reads doc into a tree of elements.
func parse(doc []byte) (*element, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	var stack []*element
	var root *element
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			e := &element{name: t.Name.Local, attrs: map[string]string{}}
			for _, a := range t.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, e)
			} else if root == nil {
				root = e
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && strings.TrimSpace(string(t)) != "" {
				stack[len(stack)-1].text = true
			}
		}
	}
	if root == nil {
		return nil, errors.New("not XML: no element")
	}
	return root, nil
}
