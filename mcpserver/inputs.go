package mcpserver

import (
	"strconv"
)

// The tools' inputs. Each field is a flag of the command the tool runs
// (its name in the flag's words); a zero field is a flag not given, so the
// command's default applies. Values are checked by the command, as on the
// command line.

// InspectInput is replay_inspect's input.
type InspectInput struct {
	Snapshot string `json:"snapshot" jsonschema:"the snapshot file to summarize"`
}

// Load holds the flags replay_run and replay_compare share.
type Load struct {
	VUs       int      `json:"vus,omitempty" jsonschema:"closed model: N virtual users (compare: the most the fair load may use)"`
	Duration  string   `json:"duration,omitempty" jsonschema:"load time, e.g. 10s (compare: per side)"`
	Rate      string   `json:"rate,omitempty" jsonschema:"open model: requests per unit, e.g. 200/s or 1000/m"`
	Endpoints []string `json:"endpoints,omitempty" jsonschema:"replay only these endpoints: 'GET /orders/{id}', a glob 'GET /orders*' or a path glob '/orders/*'"`
	Headers   []string `json:"headers,omitempty" jsonschema:"headers 'K: V' added to every request"`
	Mock      []string `json:"mock,omitempty" jsonschema:"upstreams HOST:PORT the snapshot answers for ('all': every recorded upstream)"`
	Postgres  string   `json:"postgres,omitempty" jsonschema:"count SQL per request: [LISTEN=]HOST:PORT of the PostgreSQL server the build uses"`
	MySQL     string   `json:"mysql,omitempty" jsonschema:"count SQL per request: [LISTEN=]HOST:PORT of the MySQL or MariaDB server the build uses"`
	Goals     []string `json:"goals,omitempty" jsonschema:"goals the build must meet, e.g. 'p95<500ms', 'success>99%', 'GET /orders: sql<=5'"`
	Args      []string `json:"args,omitempty" jsonschema:"more flags of the command, as on its command line, e.g. ['--explain=5', '--ignore=$.id'] (see replay COMMAND --help)"`
	Auth
}

// Auth holds the flags of tokens and correlation that replay_run and
// replay_compare share. The OAuth2 client secret is never an input: the
// command reads it from the environment the server passes on.
type Auth struct {
	TokenCmd              string   `json:"token_cmd,omitempty" jsonschema:"shell command whose trimmed output is the token every request carries (where the recording redacted a credential)"`
	TokenTTL              string   `json:"token_ttl,omitempty" jsonschema:"lifetime of a token_cmd token that is not a JWT, e.g. 5m"`
	TokenHeader           string   `json:"token_header,omitempty" jsonschema:"header the token goes in (default: where the recording redacted a credential)"`
	TokenFormat           string   `json:"token_format,omitempty" jsonschema:"the token header's value with {token} for the token, e.g. 'Bearer {token}'"`
	OAuth2TokenURL        string   `json:"oauth2_token_url,omitempty" jsonschema:"get tokens with the OAuth2 client-credentials grant from this token endpoint"`
	OAuth2ClientID        string   `json:"oauth2_client_id,omitempty" jsonschema:"OAuth2 client id"`
	OAuth2Scopes          []string `json:"oauth2_scopes,omitempty" jsonschema:"OAuth2 scopes to ask for"`
	OAuth2ClientSecretEnv string   `json:"oauth2_client_secret_env,omitempty" jsonschema:"environment variable of the server holding the OAuth2 client secret (default OAUTH2_CLIENT_SECRET)"`
	NoCorrelate           bool     `json:"no_correlate,omitempty" jsonschema:"send recorded ids as recorded instead of the live values of earlier answers"`
	SessionKey            string   `json:"session_key,omitempty" jsonschema:"request header whose value tells recorded clients apart, for correlation"`
	ShiftTimes            bool     `json:"shift_times,omitempty" jsonschema:"move timestamps within the recording's span by the replay's offset"`
}

func (a *argv) auth(in Auth) {
	a.str("token-cmd", in.TokenCmd)
	a.str("token-ttl", in.TokenTTL)
	a.str("token-header", in.TokenHeader)
	a.str("token-format", in.TokenFormat)
	a.str("oauth2-token-url", in.OAuth2TokenURL)
	a.str("oauth2-client-id", in.OAuth2ClientID)
	a.strs("oauth2-scope", in.OAuth2Scopes)
	a.str("oauth2-client-secret-env", in.OAuth2ClientSecretEnv)
	a.bool("no-correlate", in.NoCorrelate)
	a.str("session-key", in.SessionKey)
	a.bool("shift-times", in.ShiftTimes)
}

// RunInput is replay_run's input.
type RunInput struct {
	Snapshot       string   `json:"snapshot" jsonschema:"the snapshot file to replay"`
	Out            string   `json:"out" jsonschema:"the run file to create (must not exist); replay_report reads it again"`
	Target         string   `json:"target,omitempty" jsonschema:"base URL of a running build to replay against (or give cmd)"`
	Cmd            string   `json:"cmd,omitempty" jsonschema:"command (sh -c) that starts the build, which must listen on $PORT (or give target)"`
	Env            []string `json:"env,omitempty" jsonschema:"environment variables of cmd, each KEY=VALUE"`
	Iterations     int      `json:"iterations,omitempty" jsonschema:"send N passes over the recorded requests"`
	MaxFailed      string   `json:"max_failed,omitempty" jsonschema:"fail the run when more than this share of its requests fail, e.g. 1% (the default) or 0"`
	CheckResponses bool     `json:"check_responses,omitempty" jsonschema:"compare the build's answers with the recorded ones; a difference fails the run"`
	Load
}

// CompareInput is replay_compare's input: two run files (offline), or a
// snapshot and two builds (live).
type CompareInput struct {
	Runs         []string `json:"runs,omitempty" jsonschema:"offline: the baseline's and the candidate's run files, compared without replaying (no snapshot or builds then)"`
	Snapshot     string   `json:"snapshot,omitempty" jsonschema:"live: the snapshot file to replay against both builds"`
	BaselineURL  string   `json:"baseline_url,omitempty" jsonschema:"base URL of the running baseline build"`
	BaselineCmd  string   `json:"baseline_cmd,omitempty" jsonschema:"command (sh -c) that starts the baseline build on $PORT"`
	CandidateURL string   `json:"candidate_url,omitempty" jsonschema:"base URL of the running candidate build"`
	CandidateCmd string   `json:"candidate_cmd,omitempty" jsonschema:"command (sh -c) that starts the candidate build on $PORT"`
	Env          []string `json:"env,omitempty" jsonschema:"environment variables (KEY=VALUE) of both build commands"`
	BaselineEnv  []string `json:"baseline_env,omitempty" jsonschema:"environment variables (KEY=VALUE) of the baseline's command (win over env)"`
	CandidateEnv []string `json:"candidate_env,omitempty" jsonschema:"environment variables (KEY=VALUE) of the candidate's command (win over env)"`
	Reset        string   `json:"reset,omitempty" jsonschema:"command (sh -c) that restores the data before each side"`
	MaxDuration  string   `json:"max_duration,omitempty" jsonschema:"run until every endpoint (and the builds' CPU per request) is conclusive, up to this load time per side, e.g. 2m"`
	MinChange    string   `json:"min_change,omitempty" jsonschema:"smallest p95 change that counts, percentage and duration, e.g. '10%,5ms'"`
	MinCPUChange string   `json:"min_cpu_change,omitempty" jsonschema:"smallest change of CPU time per request that counts, e.g. '5%' (default: min_change's percentage)"`
	Confidence   float64  `json:"confidence,omitempty" jsonschema:"confidence level of the intervals, e.g. 0.95 (default 0.99)"`
	Out          string   `json:"out,omitempty" jsonschema:"directory for the run files, build logs and reports (live default: a new ./replay-compare-TIMESTAMP; offline: none)"`
	Load
}

// ReportInput is replay_report's input.
type ReportInput struct {
	Path       string   `json:"path" jsonschema:"a run file, or a comparison's output directory"`
	Goals      []string `json:"goals,omitempty" jsonschema:"more goals to check, e.g. 'p95<500ms'"`
	MaxFailed  string   `json:"max_failed,omitempty" jsonschema:"run file: the share of failed requests that fails it (default: as the run was given)"`
	MinChange  string   `json:"min_change,omitempty" jsonschema:"directory: smallest p95 change that counts (default: as the comparison was made)"`
	Confidence float64  `json:"confidence,omitempty" jsonschema:"directory: confidence level of the intervals (default: as the comparison was made)"`
	Args       []string `json:"args,omitempty" jsonschema:"more flags of replay report, e.g. ['--ignore=$.id']"`
}

// DemoInput is replay_demo's input.
type DemoInput struct {
	Out      string `json:"out,omitempty" jsonschema:"directory for everything the demo writes (default: a new replay-demo-* directory in the temp dir)"`
	Duration string `json:"duration,omitempty" jsonschema:"load time per side, e.g. 5s (default 10s)"`
	Rounds   int    `json:"rounds,omitempty" jsonschema:"rounds of the demo's request mix to record (default 10)"`
}

// VersionOutput is replay_version's structured content.
type VersionOutput struct {
	Version string `json:"version" jsonschema:"replay's module version, VCS revision and time"`
}

// argv builds a command line: a flag is added only when its value is set.
type argv []string

func (a *argv) str(flag, v string) {
	if v != "" {
		*a = append(*a, "--"+flag+"="+v)
	}
}

func (a *argv) strs(flag string, vs []string) {
	for _, v := range vs {
		*a = append(*a, "--"+flag+"="+v)
	}
}

func (a *argv) int(flag string, v int) {
	if v != 0 {
		a.str(flag, strconv.Itoa(v))
	}
}

func (a *argv) float(flag string, v float64) {
	if v != 0 {
		a.str(flag, strconv.FormatFloat(v, 'g', -1, 64))
	}
}

func (a *argv) bool(flag string, v bool) {
	if v {
		*a = append(*a, "--"+flag)
	}
}

// load adds the shared flags; Args come last, so they win.
func (a *argv) load(l Load) {
	a.int("vus", l.VUs)
	a.str("duration", l.Duration)
	a.str("rate", l.Rate)
	a.strs("endpoint", l.Endpoints)
	a.strs("header", l.Headers)
	a.strs("mock", l.Mock)
	a.str("postgres", l.Postgres)
	a.str("mysql", l.MySQL)
	a.strs("goal", l.Goals)
	a.auth(l.Auth)
	*a = append(*a, l.Args...)
}

func (in RunInput) args(extra ...string) []string {
	a := argv{"run"}
	a.str("snapshot", in.Snapshot)
	a.str("out", in.Out)
	a.str("target", in.Target)
	a.str("cmd", in.Cmd)
	a.strs("env", in.Env)
	a.int("iterations", in.Iterations)
	a.str("max-failed", in.MaxFailed)
	a.bool("check-responses", in.CheckResponses)
	a.load(in.Load)
	return append(a, extra...)
}

// args are the flags of the comparison, then extra, the run files last.
func (in CompareInput) args(extra ...string) []string {
	a := argv{"compare"}
	a.str("snapshot", in.Snapshot)
	a.str("baseline-url", in.BaselineURL)
	a.str("baseline-cmd", in.BaselineCmd)
	a.str("candidate-url", in.CandidateURL)
	a.str("candidate-cmd", in.CandidateCmd)
	a.strs("env", in.Env)
	a.strs("baseline-env", in.BaselineEnv)
	a.strs("candidate-env", in.CandidateEnv)
	a.str("reset", in.Reset)
	a.str("max-duration", in.MaxDuration)
	a.str("min-change", in.MinChange)
	a.str("min-cpu-change", in.MinCPUChange)
	a.float("confidence", in.Confidence)
	a.load(in.Load)
	a = append(a, extra...)
	if len(in.Runs) > 0 {
		a = append(append(a, "--"), in.Runs...)
	}
	return a
}

func (in ReportInput) args(extra ...string) []string {
	a := argv{"report"}
	a.strs("goal", in.Goals)
	a.str("max-failed", in.MaxFailed)
	a.str("min-change", in.MinChange)
	a.float("confidence", in.Confidence)
	a = append(append(a, in.Args...), extra...)
	return append(a, "--", in.Path)
}

func (in DemoInput) args(dir string) []string {
	a := argv{"demo", "--out=" + dir}
	a.str("duration", in.Duration)
	a.int("rounds", in.Rounds)
	return a
}
