package snapshots

// Wiring is what a run's mock and SQL counter saw of the builds that used
// them, so that a build that did not use them (or used another side's) can
// be told from one that made no calls. A run file stores it as JSON under
// the run_info key "wiring" (absent before replay recorded it: nil).
type Wiring struct {
	// SQLAddr is the address of the run's SQL counter; empty when SQL was
	// not counted, and then the SQL fields below mean nothing.
	SQLAddr string `json:"sql_addr,omitempty"`
	// SQLApp is the application_name replay gave the run's build
	// (PGAPPNAME), e.g. "replay-baseline"; empty when it gave none (a build
	// the user started, or one whose environment named its own).
	SQLApp string `json:"sql_app,omitempty"`
	// SQLConnections counts the client connections the counter accepted
	// (each one's startup read), whoever made them.
	SQLConnections int64 `json:"sql_connections"`
	// SQLClients counts connections and statements per application_name
	// the clients gave at startup ("" for none), by name.
	SQLClients []SQLClient `json:"sql_clients,omitempty"`
	// SQLUpstreamErrors counts the client connections the counter could
	// not open to the database (it was down or refused); zero in run files
	// written before replay recorded it.
	SQLUpstreamErrors int64 `json:"sql_upstream_errors,omitempty"`
	// MockAddr is the address of the run's mock; empty when nothing was
	// mocked, and then the mock fields below mean nothing.
	MockAddr string `json:"mock_addr,omitempty"`
	// MockCalls counts the requests to mocked services the mock received,
	// answered or missed (RunInfo.MockMisses counts the misses among them);
	// calls to services it does not mock are not counted.
	MockCalls int64 `json:"mock_calls"`
	// RecordedCalls counts the outbound calls to mocked services that the
	// snapshot links to the inbound requests replayed (Exchange.ParentID),
	// once each: zero when the recorded requests made none.
	RecordedCalls int64 `json:"recorded_calls"`
	// MockPassthroughErrors counts the calls the mock passed through to
	// a real upstream (misses under --on-miss passthrough, services not
	// mocked) that the upstream did not answer: it was down or cut the
	// connection. Zero in run files written before replay recorded it.
	MockPassthroughErrors int64 `json:"mock_passthrough_errors,omitempty"`
	// MockTruncated counts the calls the mock matched to a recorded
	// response whose body was cut at recording (--body-limit): served cut
	// with --allow-truncated (MockTruncatedServed), else refused with a
	// 502. Zero in run files written before replay recorded it.
	MockTruncated int64 `json:"mock_truncated,omitempty"`
	// MockTruncatedServed says the mock served those responses cut
	// (--allow-truncated) rather than refusing them.
	MockTruncatedServed bool `json:"mock_truncated_served,omitempty"`
}

// SQLClient is what a SQL counter saw of the clients that gave one
// application_name.
type SQLClient struct {
	// App is the application_name of the clients' startup; "" for none.
	App string `json:"app"`
	// Connections counts their connections; Statements the statements
	// completed on them.
	Connections int64 `json:"connections"`
	Statements  int64 `json:"statements"`
}
