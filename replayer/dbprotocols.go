package replayer

// DatabaseProtocols are the protocols a build's environment is rewritten
// for, by Name (sqlcount's protocol names).
var DatabaseProtocols = []DatabaseProtocol{PostgreSQL, MySQL}

// DatabaseProtocolNamed returns the protocol of a name in
// DatabaseProtocols; false for another.
func DatabaseProtocolNamed(name string) (DatabaseProtocol, bool) {
	for _, p := range DatabaseProtocols {
		if p.Name == name {
			return p, true
		}
	}
	return DatabaseProtocol{}, false
}
