# replay — build, test, demo, bench, lint.
GO ?= go
PKGS := ./...
# Where `make build` writes the binary (the GitHub Action sets it).
BIN ?= bin/replay

.PHONY: build test test-short fuzz-short demo bench lint clean

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/replay

# All tests, with the race detector, against real PostgreSQL clusters that the
# tests start themselves (internal/pgtest).
# The end-to-end tests (e2e/: third-party servers under load) run after the
# others, not beside them: their CPU load would skew the timing-sensitive
# comparisons of cmd/replay on a 2-core machine.
# Then every fuzz target for a moment (fuzz-short).
test:
	$(GO) test -race -timeout 15m $$($(GO) list $(PKGS) | grep -v '/e2e$$')
	$(GO) test -race -timeout 15m ./e2e/
	$(MAKE) fuzz-short

# Every fuzz target for 2 s (docs/fuzzing.md); scripts/fuzz runs them longer.
fuzz-short:
	./scripts/fuzz -t 2s -j 2 -p 1

test-short:
	$(GO) test -short -timeout 10m $(PKGS)

demo: build
	$(BIN) demo

bench:
	./scripts/bench

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@if $(GO) list -deps ./cmd/replay | grep -qx testing; then echo "the replay binary links package testing"; exit 1; fi

clean:
	rm -rf bin
