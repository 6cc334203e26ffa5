# Replica — build, test, run. `make help` lists the targets.
GO ?= go
export GOFLAGS ?=

.PHONY: help test test-native vet

help:
	@echo "make test   - vet and run every test (native)"

vet:
	$(GO) vet ./...

test-native:
	$(GO) test -count=1 ./...

test: vet test-native
