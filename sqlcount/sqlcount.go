package sqlcount

import (
	"fmt"

	"github.com/replaykit/replay/sqlcount/mysqlwire"
	"github.com/replaykit/replay/sqlcount/pgwire"
	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// The core's types: a counter is the same whatever its wire protocol.
type (
	// Config configures a Proxy; Config.Protocol picks the wire protocol.
	Config = sqlcore.Config
	// Proxy counts, times, fingerprints and attributes statements.
	Proxy = sqlcore.Proxy
	// Stats are a proxy's totals.
	Stats = sqlcore.Stats
	// FingerprintStats are the totals of one fingerprint.
	FingerprintStats = sqlcore.FingerprintStats
	// ClientStats are the totals of one client program.
	ClientStats = sqlcore.ClientStats
)

// The wire protocols (Config.Protocol).
const (
	Postgres = "postgres"
	MySQL    = "mysql"
)

// Protocols lists the wire protocols a Proxy speaks.
var Protocols = []string{Postgres, MySQL}

// The TLS modes toward the server (Config.UpstreamTLS, UpstreamTLSConfig).
const (
	TLSDisable    = sqlcore.TLSDisable
	TLSRequire    = sqlcore.TLSRequire
	TLSVerifyFull = sqlcore.TLSVerifyFull
)

// JSONSchemaVersion is the version of the document Stats.WriteJSON writes.
const JSONSchemaVersion = sqlcore.JSONSchemaVersion

// MaxUnattributedBins bounds the histogram Proxy.Unattributed returns.
const MaxUnattributedBins = sqlcore.MaxUnattributedBins

// UpstreamTLSConfig returns Config.UpstreamTLS for a TLS mode.
var UpstreamTLSConfig = sqlcore.UpstreamTLSConfig

// OwnProcess sets a Config up for a process that does nothing but count
// (an event loop per core, see sqlcore.OwnProcess).
var OwnProcess = sqlcore.OwnProcess

// New returns a proxy to cfg.Upstream speaking cfg.Protocol ("" is
// PostgreSQL).
func New(cfg Config) (*Proxy, error) {
	w, err := Wire(cfg.Protocol)
	if err != nil {
		return nil, err
	}
	return sqlcore.New(cfg, w)
}

// Wire returns the wire protocol of a name in Protocols ("" is PostgreSQL).
func Wire(protocol string) (sqlcore.Wire, error) {
	switch protocol {
	case "", Postgres:
		return pgwire.Wire{}, nil
	case MySQL:
		return mysqlwire.New(), nil
	}
	return nil, fmt.Errorf("sqlcount: protocol %q: want %s or %s", protocol, Postgres, MySQL)
}

// Fingerprint returns PostgreSQL's fingerprint of sql (see
// pgwire.Fingerprint).
func Fingerprint(sql string) string { return pgwire.Fingerprint(sql) }
