package mock

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/cputime"
	"github.com/replaykit/replay/snapshots"
)

// benchConcurrency is the number of clients in flight in the throughput
// benchmarks.
const benchConcurrency = 32

// benchPayload is a typical small JSON answer.
var benchPayload = []byte(`{"id":42,"name":"widget","price":{"amount":1999,"currency":"EUR"},"tags":["a","b","c"],"description":"` + strings.Repeat("lorem ipsum ", 70) + `"}`)

// benchEnv has an upstream (plain and TLS) and a mock that answers the same
// paths from a recording of 1000 items per service.
type benchEnv struct {
	plainUp, tlsUp *httptest.Server
	proxy          string      // the mock, answering
	passProxy      string      // a mock with OnMiss passthrough, resolving names to the upstreams
	ca             *tls.Config // trusts the mock's CA
	upTLS          *tls.Config // trusts the upstream, whatever name it is reached by
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(benchPayload)
	})
	tlsUp := httptest.NewUnstartedServer(h)
	tlsUp.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut at cleanup
	tlsUp.StartTLS()
	e := &benchEnv{plainUp: httptest.NewServer(h), tlsUp: tlsUp}
	b.Cleanup(e.plainUp.Close)
	b.Cleanup(e.tlsUp.Close)
	c := testCA(b)
	var exs []*snapshots.Exchange
	for i := range 1000 {
		for _, origin := range []string{"http://api.test", "https://api.test"} {
			ex := rec(int64(len(exs)+1), "GET", fmt.Sprintf("%s/items/%d?view=full", origin, i), "", "")
			ex.ResponseHeader = http.Header{"Content-Type": {"application/json"}, "Date": {"Sat, 01 Mar 2025 12:00:00 GMT"}}
			ex.ResponseBody, ex.ResponseBodySize = benchPayload, int64(len(benchPayload))
			exs = append(exs, ex)
		}
	}
	s := newServer(b, Config{Exchanges: exs, CA: c})
	e.proxy = startMock(b, s)
	e.ca = &tls.Config{RootCAs: c.Pool()}
	e.upTLS = tlsUp.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	e.upTLS.ServerName = "example.com" // httptest's certificate
	plainAddr, tlsAddr := e.plainUp.Listener.Addr().String(), tlsUp.Listener.Addr().String()
	pass := newServer(b, Config{Exchanges: exs, CA: c, OnMiss: OnMissPassthrough, UpstreamTLS: e.upTLS,
		Resolve: map[string]string{"api.test:80": plainAddr, "api.test:443": tlsAddr, "other.test:80": plainAddr, "other.test:443": tlsAddr}})
	e.passProxy = startMock(b, pass)
	return e
}

func benchClient(b *testing.B, proxy string, tlsConf *tls.Config) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:     tlsConf,
		MaxIdleConns:        benchConcurrency * 2,
		MaxIdleConnsPerHost: benchConcurrency * 2,
		DisableCompression:  true,
	}
	if proxy != "" {
		u, _ := url.Parse(proxy)
		tr.Proxy = http.ProxyURL(u)
	}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func fetch(c *http.Client, u string) error {
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || n != int64(len(benchPayload)) {
		return fmt.Errorf("GET %s: %d, %d bytes", u, resp.StatusCode, n)
	}
	return nil
}

// targets returns the client and the URL maker for one configuration:
//
//	direct       the client calls the upstream itself
//	mock         the mock answers from the recording
//	forward      through the mock to a service it does not mock: plain HTTP
//	             forwarded, HTTPS tunnelled (CONNECT, no interception)
//	miss-pass    through the mock to a mocked service, missing, passed
//	             through to the real upstream (HTTPS intercepted); the
//	             cost of explaining a miss is in BenchmarkMatch/miss
func (e *benchEnv) targets(b *testing.B, via, scheme string) (*http.Client, func(i int) string) {
	path := func(i int) string { return fmt.Sprintf("/items/%d?view=full", i%1000) }
	switch via {
	case "direct":
		if scheme == "http" {
			return benchClient(b, "", nil), func(i int) string { return e.plainUp.URL + path(i) }
		}
		return benchClient(b, "", e.upTLS), func(i int) string { return e.tlsUp.URL + path(i) }
	case "mock":
		return benchClient(b, e.proxy, e.ca), func(i int) string { return scheme + "://api.test" + path(i) }
	case "forward":
		return benchClient(b, e.passProxy, e.upTLS), func(i int) string { return scheme + "://other.test" + path(i) }
	case "miss-pass":
		// Ten distinct misses: each is explained once, then only counted.
		return benchClient(b, e.passProxy, e.ca), func(i int) string { return scheme + "://api.test/pass" + path(i%10) }
	}
	b.Fatalf("no target %q", via)
	return nil, nil
}

// benchVias are the configurations the benchmarks compare.
var benchVias = []string{"direct", "mock", "forward", "miss-pass"}

// BenchmarkThroughput: answers per second with benchConcurrency keep-alive
// clients, for each configuration of targets.
func BenchmarkThroughput(b *testing.B) {
	e := newBenchEnv(b)
	for _, scheme := range []string{"http", "https"} {
		for _, via := range benchVias {
			b.Run(via+"-"+scheme, func(b *testing.B) {
				c, target := e.targets(b, via, scheme)
				b.SetParallelism(max(1, benchConcurrency/runtime.GOMAXPROCS(0)))
				cpu0 := cputime.Self()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						i++
						if err := fetch(c, target(i)); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
				// CPU of the whole process (client, and upstream or mock) per
				// request: the fair comparison on a shared machine.
				b.ReportMetric(float64((cputime.Self()-cpu0).Microseconds())/float64(b.N), "cpu-µs/req")
			})
		}
	}
}

// BenchmarkLatency: one client, one request at a time, for each
// configuration of targets: what the mock adds is the difference to direct.
func BenchmarkLatency(b *testing.B) {
	e := newBenchEnv(b)
	for _, scheme := range []string{"http", "https"} {
		for _, via := range benchVias {
			b.Run(via+"-"+scheme, func(b *testing.B) {
				c, target := e.targets(b, via, scheme)
				if err := fetch(c, target(0)); err != nil { // connection (and TLS) set up
					b.Fatal(err)
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := range b.N {
					start := time.Now()
					if err := fetch(c, target(i)); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}

// BenchmarkMatch: the matcher alone over 10,000 recorded exchanges.
func BenchmarkMatch(b *testing.B) {
	var exs []*snapshots.Exchange
	for i := range 10000 {
		exs = append(exs, rec(int64(i+1), "POST", fmt.Sprintf("https://api.test/items/%d?view=full&ts=1700000000", i),
			fmt.Sprintf(`{"item":%d,"qty":2,"request_id":"3f2a9c1e-8b7d-4e6f-a5b4-c3d2e1f0a9b8"}`, i), "ok"))
	}
	m, _, err := newMatcher(exs, newVolatility(nil), nil)
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct{ name, url, body string }{
		{"exact", "https://api.test/items/5000?view=full&ts=1700000000", `{"item":5000,"qty":2,"request_id":"3f2a9c1e-8b7d-4e6f-a5b4-c3d2e1f0a9b8"}`},
		{"loose", "https://api.test/items/5000?ts=1800000000&view=full", `{"qty":2,"item":5000,"request_id":"00000000-8b7d-4e6f-a5b4-c3d2e1f0a9b8"}`},
		{"template", "https://api.test/items/123456?view=full&ts=1700000000", `{"item":5000,"qty":2,"request_id":"3f2a9c1e-8b7d-4e6f-a5b4-c3d2e1f0a9b8"}`},
		{"miss", "https://api.test/items/5000?view=short", `{"item":5000,"qty":3}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			u, _ := url.Parse(c.url)
			for b.Loop() {
				q := newRequest("POST", "https", "api.test:443", u, "application/json", []byte(c.body))
				if en, _, _ := m.match(&q); en == nil {
					m.explain(&q)
				}
			}
		})
	}
}
