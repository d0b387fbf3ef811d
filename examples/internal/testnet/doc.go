// Package testnet holds fixtures for the examples' network tests: a
// self-signed TLS certificate (NewCert) and a minimal HTTP CONNECT proxy
// (NewProxy) that tunnels to one address and records the hosts it was asked
// for. It is for tests only and does not intercept TLS.
package testnet
