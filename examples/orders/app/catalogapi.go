package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
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
// no SQL; with Config.UpstreamN1, one more GET of CatalogURL/products/{sku}
// per product (the answer is the same). The request's traceparent (and
// tracestate) travel with the calls, so a recorder can link them to the
// inbound request. Any failure is a 502.
func (a *App) getCatalog(w http.ResponseWriter, r *http.Request) {
	products, err := a.fetchProducts(r.Context(), r.Header)
	if err == nil && a.upstreamN1 {
		err = a.fetchEach(r.Context(), r.Header, products)
	}
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
	resp, err := a.catalogGet(ctx, url, in)
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

// catalogGet sends GET url to the catalog API with the inbound request's
// trace headers.
func (a *App) catalogGet(ctx context.Context, url string, in http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	for _, h := range []string{"traceparent", "tracestate"} {
		if v := in.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	return a.client.Do(req)
}

// fetchEach calls GET /products/{sku} for every product, one at a time: the
// HTTP N+1 of Config.UpstreamN1.
func (a *App) fetchEach(ctx context.Context, in http.Header, products []json.RawMessage) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, p := range products {
		var id struct {
			SKU string `json:"sku"`
		}
		if err := json.Unmarshal(p, &id); err != nil || id.SKU == "" {
			return fmt.Errorf("catalog: a product without a \"sku\": %s", p)
		}
		url := strings.TrimRight(a.catalog, "/") + "/products/" + neturl.PathEscape(id.SKU)
		resp, err := a.catalogGet(ctx, url, in)
		if err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxCatalog))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("catalog: GET %s: %s", url, resp.Status)
		}
	}
	return nil
}
