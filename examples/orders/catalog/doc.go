// Package catalog is a local stand-in for the external product catalog API
// that the demo workload (examples/orders) calls over HTTPS.
//
// Handler serves a fixed, deterministic list of products: GET /products (gzip
// encoded when the client accepts gzip, so that recording has compressed bytes
// to keep faithfully) and GET /products/{sku}. Start runs the handler over TLS
// with a certificate the caller provides (the demo uses one issued by replay's
// CA), so the orders service reaches it exactly as it would a real HTTPS API.
//
// It keeps no state, has no write endpoints and is not a product surface of
// replay: it exists so that the demo and tests have an upstream to record and
// then mock.
package catalog
