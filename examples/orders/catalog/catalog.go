package catalog

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Product is one entry of the catalog.
type Product struct {
	// SKU identifies the product, e.g. "SKU-1001".
	SKU string `json:"sku"`
	// Name is a human-readable product name.
	Name string `json:"name"`
	// PriceCents is the unit price in cents.
	PriceCents int64 `json:"price_cents"`
	// Currency is an ISO 4217 code.
	Currency string `json:"currency"`
	// Stock is the number of units available.
	Stock int `json:"stock"`
}

// List is the body of GET /products.
type List struct {
	Products []Product `json:"products"`
}

// Products returns the fixed product list that the stand-in serves, in the
// order it serves them. The slice is a fresh copy.
func Products() []Product {
	return []Product{
		{SKU: "SKU-1001", Name: "Espresso beans, 1 kg", PriceCents: 1899, Currency: "EUR", Stock: 120},
		{SKU: "SKU-1002", Name: "Filter coffee, 500 g", PriceCents: 899, Currency: "EUR", Stock: 340},
		{SKU: "SKU-1003", Name: "Ceramic pour-over dripper", PriceCents: 2450, Currency: "EUR", Stock: 45},
		{SKU: "SKU-1004", Name: "Paper filters, 100 pcs", PriceCents: 499, Currency: "EUR", Stock: 800},
		{SKU: "SKU-1005", Name: "Burr grinder", PriceCents: 12900, Currency: "EUR", Stock: 12},
		{SKU: "SKU-1006", Name: "Gooseneck kettle", PriceCents: 5900, Currency: "EUR", Stock: 30},
		{SKU: "SKU-1007", Name: "Digital scale", PriceCents: 3299, Currency: "EUR", Stock: 64},
		{SKU: "SKU-1008", Name: "Milk jug, 350 ml", PriceCents: 1599, Currency: "EUR", Stock: 90},
		{SKU: "SKU-1009", Name: "Tamper, 58 mm", PriceCents: 2799, Currency: "EUR", Stock: 25},
		{SKU: "SKU-1010", Name: "Cleaning tablets, 50 pcs", PriceCents: 1099, Currency: "EUR", Stock: 410},
	}
}

// Handler returns the catalog API: GET /products and GET /products/{sku}.
// Responses are byte-for-byte the same on every call and in every process.
func Handler() http.Handler {
	products := Products()
	plain := mustJSON(List{Products: products})
	gz := gzipBytes(plain)
	bySKU := make(map[string][]byte, len(products))
	for _, p := range products {
		bySKU[p.SKU] = mustJSON(p)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /products", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Vary", "Accept-Encoding")
		body := plain
		if acceptsGzip(r.Header.Values("Accept-Encoding")) {
			h.Set("Content-Encoding", "gzip")
			body = gz
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			w.Write(body)
		}
	})
	mux.HandleFunc("GET /products/{sku}", func(w http.ResponseWriter, r *http.Request) {
		sku := r.PathValue("sku")
		body, ok := bySKU[sku]
		status := http.StatusOK
		if !ok {
			status = http.StatusNotFound
			body = mustJSON(map[string]string{"error": "product " + strconv.Quote(sku) + " not found"})
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		w.Write(body)
	})
	return mux
}

// acceptsGzip reports whether Accept-Encoding values allow gzip (a "gzip"
// token whose quality is not zero).
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
				return false
			}
			return true
		}
	}
	return false
}

// mustJSON encodes values built in this package, which always encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("catalog: encode fixed data: " + err.Error())
	}
	return append(b, '\n')
}

// gzipBytes compresses b with a zero header (no name, no modification time),
// so the result is the same on every run.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}
