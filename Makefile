# finsync developer targets. `make test` is the README's test command.
GO ?= go
PKGS := ./...

.PHONY: dev test fleet-test bench lint build

## dev: run the zero-config demo (database, simulator, API and worker in one process)
dev:
	$(GO) run ./cmd/finsync dev

## test: run every test against the real PostgreSQL
test:
	$(GO) test -count=1 -timeout 20m $(PKGS)

## fleet-test: run two serve and two worker processes on a private cluster and check them from outside
fleet-test:
	$(GO) test -tags fleet -count=1 -timeout 30m -v ./fleet/

## bench: run the Go benchmarks (see BENCHMARKS.md for the load tests)
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## lint: formatting, vet and staticcheck (pinned in go.mod's tool block; unused code included)
lint:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags fleet ./fleet/
	$(GO) tool staticcheck $(PKGS)
	$(GO) tool staticcheck -tags fleet ./fleet/

## build: the one binary, into ./bin
build:
	$(GO) build -o bin/finsync ./cmd/finsync
