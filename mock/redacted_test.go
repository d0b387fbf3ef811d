package mock

import (
	"net/http"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/snapshots"
)

// TestRedactedRecordingAnswers: calls recorded with their secrets redacted
// (by the redactor the snapshot writer uses) answer live calls that carry
// real secrets, over HTTPS through the mock's CA; a value that was not
// redacted still has to match.
func TestRedactedRecordingAnswers(t *testing.T) {
	login := rec(1, "POST", "https://api.test/login?api_key=rec-key&lang=en", `{"user":"ann","password":"rec-pw"}`, `{"ok":"login"}`)
	login.RequestHeader = http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer rec"}}
	oauth := rec(2, "POST", "https://api.test/oauth", "grant_type=cc&client_secret=rec-cs", `{"ok":"oauth"}`)
	oauth.RequestHeader = http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	list := rec(3, "GET", "https://api.test/items?token=rec-tok&page=2", "", `{"ok":"items"}`)
	r := redact.New(redact.Config{})
	r.Redact(login)
	r.Redact(oauth)
	r.Redact(list)
	if strings.Contains(login.URL+string(login.RequestBody)+string(oauth.RequestBody)+list.URL, "rec-") {
		t.Fatalf("the recording was not redacted: %s %s %s %s", login.URL, login.RequestBody, oauth.RequestBody, list.URL)
	}

	c := testCA(t)
	s := newServer(t, Config{Exchanges: []*snapshots.Exchange{login, oauth, list}, CA: c})
	client := proxyClient(t, startMock(t, s), c.Pool())
	for _, tt := range []struct {
		method, url, body, ct, want string
	}{
		{"POST", "https://api.test/login?lang=en&api_key=live-key", `{"password":"live-pw","user":"ann"}`, "application/json", `{"ok":"login"}`},
		{"POST", "https://api.test/oauth", "client_secret=live-cs&grant_type=cc", "application/x-www-form-urlencoded", `{"ok":"oauth"}`},
		{"GET", "https://api.test/items?token=live-tok&page=2", "", "", `{"ok":"items"}`},
	} {
		var body []byte
		if tt.body != "" {
			body = []byte(tt.body)
		}
		resp, got := do(t, client, tt.method, tt.url, body, "Content-Type", tt.ct, "Authorization", "Bearer live")
		if resp.StatusCode != 200 || string(got) != tt.want {
			t.Errorf("%s %s: %d %s; want 200 %s", tt.method, tt.url, resp.StatusCode, got, tt.want)
		}
	}
	// A value that was recorded as it is must still match.
	if resp, _ := do(t, client, "GET", "https://api.test/items?token=live-tok&page=3", nil); resp.StatusCode == 200 {
		t.Errorf("page=3 answered from the page=2 recording: only redacted values match anything")
	}
}
