package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// loginSQL is a login-style API for PostGraphile: the volatile function
// login(email, password) becomes a mutation that answers a session token.
const loginSQL = `
CREATE TABLE accounts (email text PRIMARY KEY, pw text NOT NULL);
INSERT INTO accounts VALUES ('ann@example.com', 'pg-s3cret-pw');
CREATE FUNCTION login(email text, password text) RETURNS text LANGUAGE sql VOLATILE AS $$
  SELECT 'tok-' || md5(a.email || clock_timestamp()::text) FROM accounts a WHERE a.email = login.email AND a.pw = login.password
$$;
`

// TestPostGraphileRedacts records a login mutation to PostGraphile whose
// password travels as a GraphQL variable and whose token comes back in the
// answer: neither is anywhere in the snapshot file, the rest is.
func TestPostGraphileRedacts(t *testing.T) {
	s := postGraphile(t) // skips when PostGraphile is not installed
	c := startCluster(t)
	c.exec(t, "postgres", "CREATE DATABASE login")
	c.exec(t, "login", loginSQL)
	dir := t.TempDir()
	snap := filepath.Join(dir, "login.snap")
	srvPort, inPort, pgPort := freePort(t), freePort(t), freePort(t)
	inAddr, pgAddr := fmt.Sprintf("127.0.0.1:%d", inPort), fmt.Sprintf("127.0.0.1:%d", pgPort)
	rec := start(t, "replay record", fmt.Sprintf("exec %q record --out %q --inbound %s=http://127.0.0.1:%d --postgres %s=%s",
		replayBin, snap, inAddr, srvPort, pgAddr, c.Addr()))
	waitTCP(t, rec, pgAddr)
	waitTCP(t, rec, inAddr)
	srv := start(t, s.name, s.command, fmt.Sprintf("PORT=%d", srvPort), "DATABASE_URL="+c.dbURL("login", pgAddr))
	waitHTTP(t, srv, fmt.Sprintf("http://127.0.0.1:%d/", srvPort))

	const mutation = `mutation Login($email: String!, $password: String!) { login(input: {email: $email, password: $password}) { token: string } }`
	resp, err := http.Post("http://"+inAddr+"/graphql", "application/json",
		bytes.NewReader(gql(mutation, map[string]any{"email": "ann@example.com", "password": "pg-s3cret-pw"})))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var answer struct {
		Data struct {
			Login struct{ Token string } `json:"login"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || !strings.HasPrefix(answer.Data.Login.Token, "tok-") {
		t.Fatalf("login answered %d %s (%v); want a token", resp.StatusCode, body, err)
	}
	srv.stop(syscall.SIGTERM)
	if err := rec.stop(syscall.SIGINT); err != nil {
		t.Fatalf("replay record: %v\n%s", err, tail(rec.out.String()))
	}
	raw, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"pg-s3cret-pw", answer.Data.Login.Token} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the snapshot holds the secret %q", secret)
		}
	}
	for _, kept := range []string{"ann@example.com", `"password":"[REDACTED]"`, `"token":"[REDACTED]"`, "mutation Login"} {
		if !bytes.Contains(raw, []byte(kept)) {
			t.Errorf("the snapshot lacks %q", kept)
		}
	}
	out, _ := replay(t, "inspect", snap)
	if !strings.Contains(string(out), "{mutation Login}") || !strings.Contains(string(out), "redaction: default") {
		t.Errorf("inspect:\n%s", out)
	}
}
