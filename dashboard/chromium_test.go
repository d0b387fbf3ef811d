package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/session"
)

// chromium is the headless browser the page is checked in.
const chromium = "/usr/bin/chromium-headless-shell"

// browser is one page of headless Chromium driven over the DevTools
// protocol: one page load, looked at as often as a test likes.
type browser struct {
	t    *testing.T
	ws   *websocket.Conn
	next int
}

// openBrowser starts headless Chromium with remote debugging on a free
// loopback port and connects to its blank page.
func openBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no headless Chromium at %s", chromium)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, chromium, "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=*", "--window-size=1400,1000", "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Its own process group, ended whole: the command may be a wrapper
	// script whose browser would outlive a kill of the script alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	listening := regexp.MustCompile(`DevTools listening on ws://([^/]+)/`)
	host := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				host <- m[1]
			}
		}
	}()
	var addr string
	select {
	case addr = <-host:
	case <-time.After(20 * time.Second):
		t.Fatal("chromium did not start its DevTools server in 20s")
	}
	resp, err := http.Get("http://" + addr + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var targets []struct{ Type, WebSocketDebuggerURL string }
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if tg.Type == "page" {
			ws, err := websocket.Dial(tg.WebSocketDebuggerURL, "", "http://127.0.0.1/")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ws.Close() })
			return &browser{t: t, ws: ws}
		}
	}
	t.Fatalf("chromium has no page: %+v", targets)
	return nil
}

// call sends one DevTools command and returns its result.
func (b *browser) call(method string, params any) json.RawMessage {
	b.t.Helper()
	b.next++
	id := b.next
	_ = b.ws.SetDeadline(time.Now().Add(20 * time.Second))
	if err := websocket.JSON.Send(b.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
	for {
		var msg struct {
			ID     int
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := websocket.JSON.Receive(b.ws, &msg); err != nil {
			b.t.Fatalf("%s: %v", method, err)
		}
		if msg.ID != id {
			continue // an event
		}
		if msg.Error != nil {
			b.t.Fatalf("%s: %s", method, msg.Error.Message)
		}
		return msg.Result
	}
}

// eval returns the value of a JavaScript expression in the page, as JSON.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct{ Text string }
	}
	if err := json.Unmarshal(b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}), &r); err != nil {
		b.t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		b.t.Fatalf("%s: %s", expr, r.ExceptionDetails.Text)
	}
	return string(r.Result.Value)
}

// text is the text of the element with id ("" when there is none).
func (b *browser) text(id string) string {
	b.t.Helper()
	var s string
	_ = json.Unmarshal([]byte(b.eval(fmt.Sprintf(`(document.getElementById(%q) || {}).textContent || ""`, id))), &s)
	return s
}

// number is the number the element with id shows, waiting up to 10s for
// one.
func (b *browser) number(id string) int64 {
	b.t.Helper()
	for range 200 {
		if n, err := strconv.ParseInt(strings.ReplaceAll(b.text(id), ",", ""), 10, 64); err == nil {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("element %s shows no number: %q", id, b.text(id))
	return 0
}

// waitText waits up to 10s for the element with id to show want.
func (b *browser) waitText(id, want string) {
	b.t.Helper()
	for range 200 {
		if b.text(id) == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Errorf("element %s shows %q; want %q", id, b.text(id), want)
}

// TestPageInChromium: headless Chromium loads the dashboard once during a
// real run; the page's own polling makes its figures grow, draws the
// charts and lists the endpoints, loading nothing from elsewhere; when
// the run ends the same page turns to done and links to the HTML report.
func TestPageInChromium(t *testing.T) {
	b := openBrowser(t)
	target := newApp(t, 2*time.Millisecond)
	d := New(Config{Addr: "127.0.0.1:0", Window: 250 * time.Millisecond})
	defer d.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := session.Run(context.Background(), session.RunConfig{
			Config: session.Config{Inbound: inbound(), Observer: d},
			Side:   session.SideConfig{Name: "run", URL: target.URL, RunPath: filepath.Join(t.TempDir(), "run.db")},
			Plan:   replayer.LoadPlan{VUs: 2, Duration: 5 * time.Second},
		})
		errc <- err
	}()
	url := waitURL(t, d)
	b.call("Page.navigate", map[string]any{"url": url})
	b.waitText("state", "running")
	n1 := b.number("v-run-requests")
	b.eval(`window.sameLoad = true`)
	time.Sleep(1500 * time.Millisecond)
	n2 := b.number("v-run-requests")
	if n1 <= 0 || n2 <= n1 || b.eval(`window.sameLoad === true`) != "true" {
		t.Errorf("requests on one load of the page: %d, then %d; want them growing", n1, n2)
	}
	if now := b.text("now"); !strings.Contains(now, "run · load") {
		t.Errorf("the page says %q; want the side and phase, run · load", now)
	}
	if p95 := b.text("v-run-p95"); p95 == "" || p95 == "–" {
		t.Errorf("p95 on the page = %q; want a figure", p95)
	}
	if rows := b.eval(`JSON.stringify([...document.querySelectorAll("#endpoints tbody tr")].map(r => r.dataset.endpoint))`); rows != `"[\"GET /orders\",\"GET /orders/{id}\"]"` {
		t.Errorf("endpoint rows %s; want GET /orders and GET /orders/{id}", rows)
	}
	for _, id := range []string{"c-latency", "c-rate", "c-endpoint"} {
		if n := b.eval(fmt.Sprintf(`document.querySelectorAll("#%s path").length`, id)); n == "0" {
			t.Errorf("chart %s draws no line", id)
		}
	}
	if res := b.eval(`JSON.stringify(performance.getEntriesByType("resource").map(e => e.name).filter(n => !n.startsWith(location.origin)))`); res != `"[]"` {
		t.Errorf("the page loaded resources from elsewhere: %s", res)
	}

	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	b.waitText("state", "done")
	b.waitText("verdict", "passed")
	if href := b.eval(`document.getElementById("report-link").href`); href != strconv.Quote(url+"report") {
		t.Errorf("report link %s; want %s", href, url+"report")
	}
	if n := b.number("v-run-requests"); n != side(t, getFeed(t, url, -1), "run").Totals.Requests || b.eval(`window.sameLoad === true`) != "true" {
		t.Errorf("the page shows %d requests at the end; the feed %d", n, side(t, getFeed(t, url, -1), "run").Totals.Requests)
	}
}
