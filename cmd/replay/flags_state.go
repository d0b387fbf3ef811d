package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/tokens"
)

// stateFlags are the flags of the replayer's stage between the plan and
// the wire, shared by run and compare (both builds get tokens from the one
// source): where tokens come from and go, correlation, moved timestamps.
type stateFlags struct {
	tokenCmd    string
	tokenTTL    time.Duration
	tokenHeader string
	tokenFormat string
	oauthURL    string
	oauthID     string
	oauthScopes []string
	oauthEnv    string
	noCorrelate bool
	sessionKey  string
	shiftTimes  bool
	getenv      func(string) string // nil: os.Getenv
	tokenCmdDir string              // the command's working directory; "": replay's
}

// defaultSecretEnv holds the OAuth2 client secret unless
// --oauth2-client-secret-env names another variable.
const defaultSecretEnv = "OAUTH2_CLIENT_SECRET"

func (s *stateFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&s.tokenCmd, "token-cmd", "", "shell `CMD` whose trimmed output is the token every request carries (run again before it expires: the JWT's exp, else --token-ttl; and at once on a 401, which is retried once)")
	f.DurationVar(&s.tokenTTL, "token-ttl", 0, "lifetime `D` of a --token-cmd token that is not a JWT (default: until the target answers 401)")
	f.StringVar(&s.tokenHeader, "token-header", "", "put the token in header `NAME` of every request (default: where the recording redacted a credential, e.g. Authorization)")
	f.StringVar(&s.tokenFormat, "token-format", "", "the token header's value, {token} standing for the token (default: the recorded scheme, e.g. 'Bearer {token}')")
	f.StringVar(&s.oauthURL, "oauth2-token-url", "", "get tokens with the OAuth2 client-credentials grant from token endpoint `URL` (refreshed before they expire)")
	f.StringVar(&s.oauthID, "oauth2-client-id", "", "OAuth2 client `ID`; the secret comes from the environment (--oauth2-client-secret-env)")
	f.StringArrayVar(&s.oauthScopes, "oauth2-scope", nil, "OAuth2 scope `S` to ask for (repeatable)")
	f.StringVar(&s.oauthEnv, "oauth2-client-secret-env", defaultSecretEnv, "environment variable `NAME` holding the OAuth2 client secret (never a flag value)")
	f.BoolVar(&s.noCorrelate, "no-correlate", false, "send recorded ids as recorded: do not carry values the server generated (JSON fields, Location, Set-Cookie) into the later requests that sent them back")
	f.StringVar(&s.sessionKey, "session-key", "", "request header `HEADER` whose value tells recorded clients apart, for correlation (default: the recorded connection)")
	f.BoolVar(&s.shiftTimes, "shift-times", false, "move timestamps in requests that lie within the recording's time span by the replay's offset from it")
}

// validate checks the flags; its errors are usage errors prefixed with cmd.
func (s *stateFlags) validate(cmd string) error {
	oauth := s.oauthURL != "" || s.oauthID != "" || len(s.oauthScopes) > 0
	switch {
	case s.tokenCmd != "" && oauth:
		return usagef("%s: --token-cmd and --oauth2-token-url: give one token source", cmd)
	case s.tokenTTL < 0:
		return usagef("%s: --token-ttl %s: want a positive duration", cmd, s.tokenTTL)
	case s.tokenTTL > 0 && s.tokenCmd == "":
		return usagef("%s: --token-ttl: give it with --token-cmd", cmd)
	case oauth && (s.oauthURL == "" || s.oauthID == ""):
		return usagef("%s: --oauth2-token-url and --oauth2-client-id go together", cmd)
	case (s.tokenHeader != "" || s.tokenFormat != "") && s.tokenCmd == "" && !oauth:
		return usagef("%s: --token-header and --token-format place a token: give --token-cmd or --oauth2-token-url", cmd)
	case s.tokenFormat != "" && !strings.Contains(s.tokenFormat, "{token}"):
		return usagef("%s: --token-format %q: want {token} where the token goes, e.g. 'Bearer {token}'", cmd, s.tokenFormat)
	case s.tokenHeader != "" && !validFlagHeader(s.tokenHeader):
		return usagef("%s: --token-header %q: want a header name, e.g. Authorization", cmd, s.tokenHeader)
	}
	if oauth {
		if !strings.HasPrefix(s.oauthURL, "http://") && !strings.HasPrefix(s.oauthURL, "https://") {
			return usagef("%s: --oauth2-token-url %q: want an http:// or https:// URL", cmd, s.oauthURL)
		}
		if s.env(s.oauthEnv) == "" {
			return usagef("%s: the OAuth2 client secret: set it in $%s (or name another variable with --oauth2-client-secret-env)", cmd, s.oauthEnv)
		}
	}
	return nil
}

func validFlagHeader(k string) bool {
	for _, c := range k {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return k != ""
}

func (s *stateFlags) env(name string) string {
	if s.getenv != nil {
		return s.getenv(name)
	}
	return os.Getenv(name)
}

// config returns the replayer's stage configuration; both sides of a
// comparison share its token source.
func (s *stateFlags) config() replayer.StateConfig {
	c := replayer.StateConfig{TokenHeader: s.tokenHeader, TokenFormat: s.tokenFormat, Correlate: !s.noCorrelate,
		SessionKey: s.sessionKey, ShiftTimes: s.shiftTimes}
	switch {
	case s.tokenCmd != "":
		c.Tokens = tokens.NewCache(tokens.Command{Cmd: s.tokenCmd, TTL: s.tokenTTL, Dir: s.tokenCmdDir}.Fetch)
	case s.oauthURL != "":
		c.Tokens = tokens.NewCache(tokens.OAuth2{TokenURL: s.oauthURL, ClientID: s.oauthID,
			ClientSecret: s.env(s.oauthEnv), Scopes: s.oauthScopes}.Fetch)
	}
	return c
}

// settings are what run files record of the flags: the token source's
// kind and address, never a token or a secret.
func (s *stateFlags) settings(out map[string]string) {
	switch {
	case s.tokenCmd != "":
		out["token_source"] = "command"
	case s.oauthURL != "":
		out["token_source"] = fmt.Sprintf("oauth2 %s (client %s)", s.oauthURL, s.oauthID)
	}
	if s.tokenHeader != "" {
		out["token_header"] = s.tokenHeader
	}
	if s.noCorrelate {
		out["correlate"] = "off"
	}
	if s.sessionKey != "" {
		out["session_key"] = s.sessionKey
	}
	if s.shiftTimes {
		out["shift_times"] = "on"
	}
}
