# resetnotify — build, test and local-run entry points. `make help` lists the targets.
#
# Tools (DynamoDB Local, moto, cfn-lint, aws-sam-translator, checkov, and the API contract tools
# openapi-spec-validator and schemathesis) live in .tools/, installed by `make tools`; nothing
# else beyond Go, Java 17, npm and Python 3 is assumed on the machine.

SHELL := /bin/bash
.DEFAULT_GOAL := help

TOOLS   := .tools
VENV    := $(TOOLS)/venv
API_VENV := $(TOOLS)/api-venv
DEVSTACK := go run ./infra/devstack exec --

# HOST_GOARCH is this machine's architecture: `make build` (the local stack) and the emulator
# targets build for it, since both run the bootstraps as host processes.
HOST_GOARCH := $(shell go env GOARCH)
# TEMPLATE_GOARCH is the GOARCH of template.yaml's default Architecture parameter (arm64 ->
# arm64, x86_64 -> amd64): `sam build` runs build-% without passing the parameter, so a plain
# `sam build && sam deploy` ships what the template declares. A test in infra/samtemplate keeps
# the two equal. GOARCH=... on the command line or in the environment overrides both.
TEMPLATE_GOARCH := arm64
# sam_architecture is the Architecture parameter for a build of GOARCH (emulator targets pass it
# to sam build and sam deploy together with GOARCH).
sam_architecture = $(if $(filter amd64,$(1)),x86_64,$(1))

# go_build_lambda builds the function in $(1) into $(2)/bootstrap for the provided.al2023 runtime
# and GOARCH $(3), stripped (-s -w: no symbol table or DWARF; panics still print stack traces).
define go_build_lambda
	GOOS=linux GOARCH=$(3) CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags="-s -w" -o $(2)/bootstrap $(1)
endef

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*?## "} /^[a-zA-Z_%-]+:.*?## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## Install DynamoDB Local, moto, cfn-lint, aws-sam-translator, checkov, openapi-spec-validator and schemathesis into .tools/ (idempotent).
	@./infra/install-tools.sh

# STATICCHECK is pinned: `go run pkg@version` fetches and caches it from the Go module proxy, so
# it needs no entry in go.mod and every run checks with the same rules.
STATICCHECK := go run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# REVIVE is pinned the same way; it enforces the function-length limit of infra/revive.toml.
REVIVE := go run github.com/mgechev/revive@v1.17.1

.PHONY: lint
lint: ## Check formatting, go vet, staticcheck and the function-length limit (revive; both pinned).
	@unformatted=$$(gofmt -l $$(go list -f '{{.Dir}}' ./...)); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	$(STATICCHECK) ./...
	$(REVIVE) -config infra/revive.toml -set_exit_status ./...

.PHONY: test
# NORACE_PKGS run without the race detector: their tests are single-goroutine, CPU-bound checks
# (the phone-number library's patterns over every number of the default trace; the repository's
# files, docs and package graph), in which it has nothing to find and which it slows 4- to
# 400-fold (59 s of CPU against 13 for infra/repocheck).
NORACE_PKGS := ./infra/trace ./infra/repocheck
test: tools lint ## Lint (gofmt, vet, staticcheck, revive), then run all tests against DynamoDB Local and moto (-race but for NORACE_PKGS).
	$(DEVSTACK) bash -c 'go test -count=1 -race $$(go list ./... | grep -vxF "$$(go list $(NORACE_PKGS))") && go test -count=1 $(NORACE_PKGS)'

.PHONY: bench
bench: tools ## Run the Go benchmarks and infra/bench against one DynamoDB Local and moto; prints name=value lines.
	RESETNOTIFY_DYNAMODB_JAVA_HEAP=1g $(DEVSTACK) bash -c "go test -run '^$$' -bench . -benchmem ./... && go run ./infra/bench"

.PHONY: validate
validate: tools ## Lint template.yaml with cfn-lint and checkov (skipped checks and why: .checkov.yaml); validate openapi.yaml.
	$(VENV)/bin/cfn-lint template.yaml
	$(TOOLS)/checkov-venv/bin/checkov -f template.yaml --config-file .checkov.yaml
	$(API_VENV)/bin/openapi-spec-validator docs/openapi.yaml

.PHONY: compat-fixtures
compat-fixtures: ## Keep the shapes release COMPAT_FROM (a tag or commit) writes in infra/compat/testdata/ (its own code writes them; infra/compat reads them), and have its decoders read this checkout's.
	./infra/compat/fixtures.sh $(COMPAT_FROM)

.PHONY: fuzz-api
fuzz-api: tools build ## Fuzz the local stack from openapi.yaml with schemathesis: no 5xx, no answer outside the spec.
	./infra/fuzz-api.sh

.PHONY: build
build: ## Build every functions/<name> for this machine (or GOARCH) into bin/<name>/bootstrap, and bin/auditctl.
	@set -e; for dir in $$(find functions -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort); do \
		name=$${dir#functions/}; echo "build $$name"; \
		$(call go_build_lambda,./$$dir,bin/$$name,$(or $(GOARCH),$(HOST_GOARCH))); \
	done
	go build -o bin/auditctl ./auditor/auditctl

# SAM's `BuildMethod: makefile` runs `make build-<LogicalId>` with ARTIFACTS_DIR set, once per
# function of template.yaml; the local stack (infra/local) reads these lines too. Each function's
# folder under functions/, one line each (a test in infra/samtemplate keeps this list and the
# template's functions the same):
build-IntakeFunction:           FUNCTION_DIR := functions/intake
build-DispatchFunction:         FUNCTION_DIR := functions/dispatch
build-ReconcileFunction:        FUNCTION_DIR := functions/reconcile
build-SweeperFunction:          FUNCTION_DIR := functions/sweeper
build-ProviderEventsFunction:   FUNCTION_DIR := functions/provider-events
# The simulator's, Sinch's and Twilio's webhooks run provider-events' code, each on its own route and role.
build-SimulatorWebhookFunction: FUNCTION_DIR := functions/provider-events
build-SinchWebhookFunction:     FUNCTION_DIR := functions/provider-events
build-TwilioWebhookFunction:    FUNCTION_DIR := functions/provider-events
build-AuditFunction:            FUNCTION_DIR := functions/audit
build-AuditReplayFunction:      FUNCTION_DIR := functions/audit-replay
build-DigestFunction:           FUNCTION_DIR := functions/digest

# A pattern rule cannot be .PHONY; nothing creates files named build-*, so it always runs.
build-%: ## Build one function of template.yaml for SAM (sam build runs it) into ARTIFACTS_DIR, for the template's default Architecture unless GOARCH is given.
	@test -n "$(FUNCTION_DIR)" || { echo "no folder for $* in the Makefile's build-<LogicalId> list"; exit 1; }
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set (sam build sets it)"; exit 1; }
	$(call go_build_lambda,./$(FUNCTION_DIR),$(ARTIFACTS_DIR),$(or $(GOARCH),$(TEMPLATE_GOARCH)))

.PHONY: local
local: tools build ## Run the whole stack locally: every function's bootstrap under the Lambda RIE (infra/local).
	go run ./infra/local

.PHONY: e2e
e2e: tools ## Start the local stack (infra/local), run the black-box suite (infra/e2e/) against it, stop it.
	./infra/local/local-e2e.sh

.PHONY: emulator-e2e
emulator-e2e: ## Deploy template.yaml to MiniStack with the SAM CLI, run the black-box suite against it, stop it.
	./infra/emulator/emulator.sh

.PHONY: faultproxy-e2e
faultproxy-e2e: ## Deploy to MiniStack behind the fault proxy (infra/faultproxy/cmd): faults on, the invariants hold; conditions off, they break; functions killed mid-invocation recover.
	RESETNOTIFY_FAULT_PROXY=1 ./infra/emulator/emulator.sh go test -count=1 -v -run 'TestDeployedStackThroughTheProxy|TestFunctionsKilledMidInvocation' ./infra/faultproxy/

# GAMEDAY_OUT is where the game days write their reports (gameday.md, gameday.json, a PNG chart
# per scenario), one folder per run; git ignores it. make gameday runs the scenarios in
# GAMEDAY_LANES lanes at once, each on a stack of its own (infra/gameday/gameday.sh); GAMEDAY_SCENARIOS
# (comma-separated) runs only those.
GAMEDAY_OUT ?= gameday-reports
GAMEDAY_LANES ?= 3
GAMEDAY_SCENARIOS ?= all
# GAMEDAY_SABOTAGE=faults-off (no proxy rule, no simulator fault) or bridge-off (no EMF bridge)
# must make the game day fail, naming the vacuous scenarios or the silent alarms.
GAMEDAY_SABOTAGE ?=

.PHONY: gameday
gameday: ## Game day: every scenario, in GAMEDAY_LANES (3) lanes at once, each lane deployed to a MiniStack of its own behind the fault proxy (104 min at 861bafb, setups included); one report in gameday-reports/<UTC time>/.
	GAMEDAY_LANES=$(GAMEDAY_LANES) GAMEDAY_SCENARIOS=$(GAMEDAY_SCENARIOS) GAMEDAY_SABOTAGE=$(GAMEDAY_SABOTAGE) ./infra/gameday/gameday.sh $(GAMEDAY_OUT)/$$(date -u +%Y%m%dT%H%M%SZ)

.PHONY: gameday-ci
gameday-ci: ## The short game day of .ci/run: 3 scenarios side by side (965 s at f2c42c5, setup and the wait for a fresh stack's alarms included); report in gameday-reports/ci-<UTC time>/.
	RESETNOTIFY_FAULT_PROXY=1 ./infra/emulator/emulator.sh go run ./infra/gameday/cmd -ci -out $(GAMEDAY_OUT)/ci-$$(date -u +%Y%m%dT%H%M%SZ)

.PHONY: deploy
deploy: ## Build for the template's Architecture and run a guided `sam deploy` to AWS (samconfig.toml).
	./infra/install-tools.sh sam
	.tools/sam/bin/sam build
	.tools/sam/bin/sam deploy --guided

.PHONY: clean
clean: ## Remove build output (not .tools/).
	rm -rf bin .aws-sam
