package main

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/snapshots"
)

// recordPlan is the validated form of recordOptions.
type recordPlan struct {
	inbound   []inboundSpec
	outbound  string
	pgListen  string
	pgServer  string
	myListen  string // of --mysql
	myServer  string
	rules     []snapshots.Rule
	resolve   map[string]string
	bodyLimit int64 // as recorder configs take it: negative records none
}

type inboundSpec struct {
	listen string
	target *url.URL
}

// plan validates opts; its errors are usage errors.
func (opts *recordOptions) plan() (*recordPlan, error) {
	p := &recordPlan{}
	if opts.out == "" {
		return nil, usagef("record: --out SNAP is required")
	}
	if err := opts.checkPcap(); err != nil {
		return nil, err
	}
	if opts.fromPcap == "" && len(opts.inbound) == 0 && opts.outbound == "" && !opts.postgres.used() && !opts.mysql.used() {
		return nil, usagef("record: nothing to record: give --inbound LISTEN=URL, --outbound LISTEN, --postgres LISTEN=HOST:PORT or --mysql LISTEN=HOST:PORT")
	}
	for _, check := range []func(*recordPlan) error{
		opts.planInbound, opts.planOutbound, opts.planPostgres, opts.planRecorded, opts.planResolve,
	} {
		if err := check(p); err != nil {
			return nil, err
		}
	}
	if opts.stopTimeout <= 0 {
		return nil, usagef("record: --stop-timeout %v: want a positive duration", opts.stopTimeout)
	}
	return p, nil
}

// planInbound checks the --inbound LISTEN=URL specs.
func (opts *recordOptions) planInbound(p *recordPlan) error {
	for _, s := range opts.inbound {
		addr, target, ok := strings.Cut(s, "=")
		if !ok {
			return usagef("record: --inbound %q: want LISTEN=URL, e.g. 127.0.0.1:8081=http://127.0.0.1:8080", s)
		}
		l, err := listen.Addr(addr)
		if err != nil {
			return usagef("record: --inbound %q: %v", s, err)
		}
		u, err := targetURL(target)
		if err != nil {
			return usagef("record: --inbound %q: %v", s, err)
		}
		p.inbound = append(p.inbound, inboundSpec{l, u})
	}
	return opts.inboundTLS.validate(len(p.inbound))
}

// planOutbound checks --outbound LISTEN.
func (opts *recordOptions) planOutbound(p *recordPlan) error {
	if opts.outbound == "" {
		return nil
	}
	l, err := listen.Addr(opts.outbound)
	if err != nil {
		return usagef("record: --outbound %q: %v", opts.outbound, err)
	}
	p.outbound = l
	return nil
}

// planPostgres checks --postgres and --mysql [LISTEN=]HOST:PORT and their
// TLS flags.
func (opts *recordOptions) planPostgres(p *recordPlan) error {
	for _, f := range []struct {
		flags          *postgresFlags
		listen, server *string
	}{{&opts.postgres, &p.pgListen, &p.pgServer}, {&opts.mysql, &p.myListen, &p.myServer}} {
		addrs, server, err := f.flags.parse("record", 1)
		if err != nil {
			return err
		}
		if len(addrs) == 0 {
			continue
		}
		l, err := listen.Addr(addrs[0])
		if err != nil {
			return usagef("record: --%s %q: %v", f.flags.flag(), f.flags.spec, err)
		}
		*f.listen, *f.server = l, server
	}
	return nil
}

// planRecorded checks what is recorded of each exchange: --endpoint,
// --endpoint-by, the redaction flags and --body-limit.
func (opts *recordOptions) planRecorded(p *recordPlan) error {
	rules, err := snapshots.ParseRules(opts.endpoints)
	if err != nil {
		return usagef("record: --endpoint: %v", err)
	}
	by, err := bodyRules("record", opts.endpointBy)
	if err != nil {
		return err
	}
	p.rules = append(rules, by...)
	if err := opts.redact.Check("record", opts.stderr); err != nil {
		return usageError{err}
	}
	switch {
	case opts.bodyLimit < 0:
		return usagef("record: --body-limit %d: want 0 or more bytes", opts.bodyLimit)
	case opts.bodyLimit == 0:
		p.bodyLimit = -1
	default:
		p.bodyLimit = opts.bodyLimit
	}
	return nil
}

// planResolve checks the flags that apply to --outbound only.
func (opts *recordOptions) planResolve(p *recordPlan) error {
	if len(opts.resolve) > 0 && p.outbound == "" {
		return usagef("record: --resolve applies to --outbound, which is not given")
	}
	if opts.outboundHTTP2 && p.outbound == "" {
		return usagef("record: --outbound-http2 applies to --outbound, which is not given")
	}
	p.resolve = map[string]string{}
	for _, s := range opts.resolve {
		from, to, ok := strings.Cut(s, "=")
		_, _, err1 := net.SplitHostPort(from)
		_, _, err2 := net.SplitHostPort(to)
		if !ok || err1 != nil || err2 != nil {
			return usagef("record: --resolve %q: want HOST:PORT=ADDR, e.g. api.example.com:443=127.0.0.1:8443", s)
		}
		p.resolve[from] = to
	}
	return nil
}

// checkPcap checks the flags of --from-pcap against the others.
func (opts *recordOptions) checkPcap() error {
	if opts.fromPcap == "" {
		if len(opts.ports) > 0 {
			return usagef("record: --port applies to --from-pcap, which is not given")
		}
		return nil
	}
	for _, c := range []struct {
		flag  string
		given bool
	}{
		{"--inbound", len(opts.inbound) > 0}, {"--outbound", opts.outbound != ""}, {"--postgres", opts.postgres.used()}, {"--mysql", opts.mysql.used()},
		{"--ca-dir", opts.caDir != ""}, {"--upstream-ca", opts.upstreamCA != ""}, {"--resolve", len(opts.resolve) > 0},
	} {
		if c.given {
			return usagef("record: %s records live traffic and cannot be combined with --from-pcap", c.flag)
		}
	}
	for _, p := range opts.ports {
		if p < 1 || p > 65535 {
			return usagef("record: --port %d: want a TCP port, 1 to 65535", p)
		}
	}
	return nil
}

// targetURL parses the app's URL; a bare host:port means http.
func targetURL(s string) (*url.URL, error) {
	if s != "" && !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("app URL %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("app URL %q: want http://HOST:PORT or https://HOST:PORT", s)
	}
	return u, nil
}
