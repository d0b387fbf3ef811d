// Package ca is replay's own certificate authority: the key pair that signs
// the leaf certificates with which the recorder and the mock intercept TLS.
//
// LoadOrCreate keeps the CA in a directory (ca.pem, and ca-key.pem readable
// by its owner only), creating an ECDSA P-256 CA valid for ten years on first
// use. Leaf signs and caches a certificate per host; MITM hands those to an
// elazarl/goproxy CONNECT handler; BundlePath writes the system roots plus the
// CA into one file for SSL_CERT_FILE, so an app trusting it still reaches real
// hosts. Describe tells a user where the CA is and how to make an app trust
// it (Info, written as text, JSON or shell export lines; TrustEnv lists the
// variables).
//
// It never uses a library's built-in CA key (goproxy ships a public one) and
// does not install the CA into any system trust store: that is the user's
// choice (see `replay ca`).
package ca
