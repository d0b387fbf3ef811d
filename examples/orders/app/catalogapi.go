package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Catalog is the body of GET /catalog: the products the catalog API sent,
// unchanged, and their number.
type Catalog struct {
	Count    int               `json:"count"`
	Products []json.RawMessage `json:"products"`
}

// maxCatalog bounds the catalog response the service reads.
const maxCatalog = 8 << 20

// getCatalog handles GET /catalog: one outbound GET of CatalogURL/products,
// no SQL. The request's traceparent (and tracestate) travel with the call,
// so a recorder can link it to the inbound request. Any failure is a 502.
func (a *App) getCatalog(w http.ResponseWriter, r *http.Request) {
	products, err := a.fetchProducts(r.Context(), r.Header)
	if err != nil {
		a.log.Warn("catalog call failed", "err", err)
		writeError(w, http.StatusBadGateway, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, Catalog{Count: len(products), Products: products})
}

func (a *App) fetchProducts(ctx context.Context, in http.Header) ([]json.RawMessage, error) {
	if a.catalog == "" {
		return nil, fmt.Errorf("catalog: no catalog API configured (CATALOG_URL)")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	url := strings.TrimRight(a.catalog, "/") + "/products"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	for _, h := range []string{"traceparent", "tracestate"} {
		if v := in.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxCatalog))
		return nil, fmt.Errorf("catalog: GET %s: %s", url, resp.Status)
	}
	var body struct {
		Products []json.RawMessage `json:"products"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxCatalog)).Decode(&body); err != nil {
		return nil, fmt.Errorf("catalog: GET %s: invalid JSON: %w", url, err)
	}
	if body.Products == nil {
		return nil, fmt.Errorf("catalog: GET %s: no \"products\" in the response", url)
	}
	return body.Products, nil
}
