package mock

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/replaykit/replay/internal/conntrack"
)

// newTransport returns the transport to real upstreams: no proxy from the
// environment (the app's HTTP_PROXY may point at us), bodies left encoded,
// enough idle connections for a concurrent app.
func (s *Server) newTransport() *http.Transport {
	var tlsConf = s.cfg.UpstreamTLS
	if tlsConf != nil {
		tlsConf = tlsConf.Clone()
	}
	return &http.Transport{
		DialContext:           s.dial,
		TLSClientConfig:       tlsConf,
		DisableCompression:    true,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// mitmTarget is goproxy's UserData for a CONNECT tunnel to a mocked service.
type mitmTarget struct {
	service string // normalised host:port
	addr    string // host:port as in the CONNECT request
}

func (s *Server) newProxy() *goproxy.ProxyHttpServer {
	p := goproxy.NewProxyHttpServer()
	p.Logger = printfLogger{s.log}
	p.Tr = s.transport
	p.ConnectDial = nil // dial through Tr.DialContext, not a proxy from the environment
	p.KeepAcceptEncoding = true
	p.AllowHTTP2 = s.cfg.HTTP2
	s.conns.Watch(p)
	p.OnRequest().HandleConnectFunc(s.connect)
	p.OnRequest().DoFunc(s.intercepted)
	return p
}

// connect decides what a CONNECT tunnel gets: interception for a mocked
// service, a plain tunnel otherwise.
func (s *Server) connect(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	svc, err := normService(host, "https")
	if err == nil && s.mocked[svc] {
		ctx.UserData = mitmTarget{service: svc, addr: host}
		return s.cfg.CA.MITM(), host
	}
	s.tunnels.Add(1)
	conntrack.Untimed(ctx.Req) // a plain tunnel: its bytes are not requests we read
	return &goproxy.ConnectAction{Action: goproxy.ConnectAccept}, host
}

// intercepted answers a request read from an intercepted tunnel. Plain
// requests passed through by ServeHTTP come here too and go on unchanged.
func (s *Server) intercepted(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	t, ok := ctx.UserData.(mitmTarget)
	if !ok {
		ctx.RoundTripper = goproxy.RoundTripperFunc(s.passRoundTrip)
		return r, nil
	}
	scheme := strings.ToLower(r.URL.Scheme)
	if isGRPC(r) {
		resp, passthrough := s.grpcCall(r, scheme, t.service)
		if passthrough {
			r.URL.Host = t.addr
			ctx.RoundTripper = goproxy.RoundTripperFunc(s.passRoundTrip)
			return r, nil
		}
		resp.Request = r
		return r, resp
	}
	c := s.startCall(r)
	body, err := readBody(r)
	if err != nil {
		return r, textReply(http.StatusBadRequest, "error", "replay mock: "+err.Error()+"\n").response(r)
	}
	en, me, endpoint := s.lookup(r, scheme, t.service, body)
	switch {
	case me != nil && s.cfg.OnMiss == OnMissPassthrough:
		s.passthrough.Add(1)
		s.endCall(c, scheme, t.service, endpoint, true)
		r.URL.Host = t.addr // where the app sent it, whatever its Host header says
		ctx.RoundTripper = goproxy.RoundTripperFunc(s.passRoundTrip)
		return r, nil
	case me != nil:
		s.endCall(c, scheme, t.service, endpoint, true)
		return r, missReply(me).response(r)
	}
	if err := s.wait(r.Context(), en); err != nil {
		return r, textReply(http.StatusGatewayTimeout, "error", "replay mock: "+err.Error()+"\n").response(r)
	}
	s.endCall(c, scheme, t.service, endpoint, false)
	return r, s.answer(r, en).response(r)
}

// reverseProxy passes requests for a served service to the real one.
func (s *Server) reverseProxy(scheme, service string) *httputil.ReverseProxy {
	target := &url.URL{Scheme: scheme, Host: service}
	return &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: s.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil {
				s.passErrors.Add(1)
			}
			textReply(http.StatusBadGateway, "error", fmt.Sprintf("replay mock: passthrough to %s: %v\n", service, err)).write(w)
		},
	}
}

// passRoundTrip sends a request passed through to the real upstream. When
// the upstream does not answer (it is down, or cut the connection) it
// counts the failure (Stats.PassthroughErrors) and answers 502 with the
// error, as ServiceHandler's passthrough does.
func (s *Server) passRoundTrip(r *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) {
	resp, err := s.transport.RoundTrip(r)
	if err == nil || r.Context().Err() != nil {
		return resp, err
	}
	s.passErrors.Add(1)
	return textReply(http.StatusBadGateway, "error", fmt.Sprintf("replay mock: passthrough to %s: %v\n", r.URL.Host, err)).response(r), nil
}

// printfLogger routes goproxy's messages to slog at debug level.
type printfLogger struct{ l *slog.Logger }

func (p printfLogger) Printf(format string, v ...any) {
	if !p.l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	p.l.Log(context.Background(), slog.LevelDebug, strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "goproxy")
}
