package main

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/pflag"

	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// buildFlags name one build: a URL the user runs or a command replay
// starts, with its environment. `run` names them --target, --cmd, --env;
// `compare` --baseline-url, --baseline-cmd, --baseline-env and the same
// for the candidate.
type buildFlags struct {
	// side is "" for run, else "baseline" or "candidate".
	side                      string
	urlFlag, cmdFlag, envFlag string
	url, cmd                  string
	env                       []string
}

// addFlags declares the flags; side is "" (run) or a side's name.
func (b *buildFlags) addFlags(f *pflag.FlagSet, side string) {
	b.side = side
	b.urlFlag, b.cmdFlag, b.envFlag = "target", "cmd", "env"
	whose := "the build"
	if side != "" {
		b.urlFlag, b.cmdFlag, b.envFlag = side+"-url", side+"-cmd", side+"-env"
		whose = "the " + side + " build"
	}
	f.StringVar(&b.url, b.urlFlag, "", "base `URL` of "+whose+" to replay against (you start it)")
	f.StringVar(&b.cmd, b.cmdFlag, "", "`COMMAND` that starts "+whose+" (run with /bin/sh -c; must listen on $PORT)")
	f.StringArrayVar(&b.env, b.envFlag, nil, "`KEY=VALUE` in the environment of --"+b.cmdFlag+" (repeatable)")
}

// validate checks the flags; its errors are usage errors prefixed with cmd.
func (b *buildFlags) validate(cmd string) error {
	whose := "the build to replay against"
	if b.side != "" {
		whose = "the " + b.side + " build"
	}
	switch {
	case b.url == "" && b.cmd == "":
		return usagef("%s: give %s: --%s URL or --%s COMMAND", cmd, whose, b.urlFlag, b.cmdFlag)
	case b.url != "" && b.cmd != "":
		return usagef("%s: --%s and --%s both name %s; give one", cmd, b.urlFlag, b.cmdFlag, strings.TrimSuffix(whose, " to replay against"))
	case len(b.env) > 0 && b.cmd == "":
		return usagef("%s: --%s applies to --%s, which is not given", cmd, b.envFlag, b.cmdFlag)
	}
	if b.url != "" {
		u, err := url.Parse(b.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("%s: --%s %q: want an http:// or https:// URL, e.g. http://127.0.0.1:8080", cmd, b.urlFlag, b.url)
		}
	}
	return checkEnv(cmd, b.envFlag, b.env)
}

// checkEnv checks KEY=VALUE entries of flag.
func checkEnv(cmd, flag string, env []string) error {
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usagef("%s: --%s %q: want KEY=VALUE", cmd, flag, kv)
		}
	}
	return nil
}

// side returns the session's side of the build.
func (b *buildFlags) sideConfig(name string, h http.Header) session.SideConfig {
	return session.SideConfig{Name: name, URL: b.url, Cmd: b.cmd, Env: b.env, Header: h}
}

// headerFlag is one flag of 'Name: value' headers.
type headerFlag struct {
	name   string
	values []string
}

// parseHeaders sets the headers of every flag into one header, in order:
// a later value of a name replaces an earlier one. Its errors are usage
// errors prefixed with cmd.
func parseHeaders(cmd string, flags ...headerFlag) (http.Header, error) {
	h := http.Header{}
	for _, f := range flags {
		for _, v := range f.values {
			k, val, ok := strings.Cut(v, ":")
			k = strings.TrimSpace(k)
			if !ok || k == "" || strings.ContainsAny(k, " \t") {
				return nil, usagef("%s: --%s %q: want 'Name: value'", cmd, f.name, v)
			}
			h.Set(k, strings.TrimSpace(val))
		}
	}
	return h, nil
}

// output validates the --format and output directory flags of cmd (see
// report.OutputFlags.Output) into usage errors.
func output(cmd string, o *report.OutputFlags, dirFlag string) (report.Output, error) {
	out, err := o.Output(dirFlag)
	if fe := (*report.FormatError)(nil); errors.As(err, &fe) {
		return out, usagef("%s: --format %q: want text, json, markdown, junit or html", cmd, strings.TrimSpace(fe.Name))
	} else if err != nil {
		return out, usagef("%s: %v", cmd, err)
	}
	return out, nil
}
