# Everyday commands. Nothing here installs anything: .ci/run installs what
# the end-to-end tests drive (PostgreSQL, Chromium, Node packages).

GO ?= go

.PHONY: run generate test test-e2e test-citus lint bench screenshots citus

run:
	$(GO) run ./cmd/tidemark serve

# Run from the repository root: run from views/ templ writes other file
# names into the generated code.
generate:
	$(GO) tool templ generate

test:
	$(GO) test -race -count=1 -timeout 30m ./...

# Also runs the tests gated by internal/e2e (Chromium, node, openssl).
test-e2e:
	TIDEMARK_E2E=1 $(GO) test -race -count=1 -timeout 30m ./...

# Every suite of postgres/, queued mode's workers (NATS on 127.0.0.1:4222) and the two-node test
# on Citus (docs/scale.md#on-citus), every test's
# database distributed over a coordinator and two workers that each test
# process starts. TestDistribute and TestServeOnCitus start their own
# cluster and run with test-e2e.
CITUS_TESTS = TIDEMARK_E2E=1 TIDEMARK_TEST_CITUS=1 $(GO) test -count=1
test-citus:
	scripts/citus-build
	$(CITUS_TESTS) ./postgres ./postgres/access ./postgres/alertcheck ./postgres/alerts ./postgres/apicreds \
		./postgres/backfills ./postgres/changefeed ./postgres/deliverylog ./postgres/destinations ./postgres/ingest \
		./postgres/maintain ./postgres/outbound ./postgres/people ./postgres/reconcile ./postgres/replay \
		./postgres/review ./postgres/search ./postgres/secretkeys ./postgres/apps ./postgres/cdc ./internal/queue
	$(CITUS_TESTS) ./cmd/tidemark -run 'TestTwoNodesOneDatabase'
	$(GO) run ./internal/citustest/cmd/citus-cluster -sweep

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

bench:
	$(GO) test ./postgres/... -run '^$$' -bench . -benchtime 200x

# Every console page at 1440, 1280, 1920 and 390 px, into ./screenshots
# (ignored by git), by the browser test that checks that each page fits.
screenshots:
	TIDEMARK_E2E=1 TIDEMARK_SCREENSHOTS=$(CURDIR)/screenshots $(GO) test ./web/console -count=1 -run 'TestBrowserConsoleFitsEveryWidth'

# A Citus coordinator and two workers for development: builds Citus once per
# machine (scripts/citus-build), prints the coordinator's DATABASE_URL and
# runs until Ctrl-C, which removes the cluster. Built, then run: `go run`
# exits 1 after an interrupt, whatever the program answers.
citus:
	scripts/citus-build
	$(GO) build -o "$${TMPDIR:-/tmp}/tidemark-citus-cluster" ./internal/citustest/cmd/citus-cluster
	"$${TMPDIR:-/tmp}/tidemark-citus-cluster"
