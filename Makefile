# Cluster API Provider Metal3 — build, test and code generation.
#
# Only Go is required: every tool below is built from the Go module proxy into
# hack/tools/bin (versioned file names, so bumping a version rebuilds), and the
# envtest binaries are built from source by hack/tools-bin.sh into a per-user
# cache.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
TOOLS_BIN_DIR := $(ROOT_DIR)/hack/tools/bin
BIN_DIR := $(ROOT_DIR)/bin

CONTROLLER_GEN_VER := v0.21.0
CONTROLLER_GEN := $(TOOLS_BIN_DIR)/controller-gen-$(CONTROLLER_GEN_VER)
# conversion-gen writes the v1beta1 <-> v1beta2 conversions of api/v1beta1
# (the fields both versions share; the rest is hand-written in conversion.go).
CONVERSION_GEN_VER := v0.36.0
CONVERSION_GEN := $(TOOLS_BIN_DIR)/conversion-gen-$(CONVERSION_GEN_VER)
GOLANGCI_LINT_VER := v2.15.0
GOLANGCI_LINT := $(TOOLS_BIN_DIR)/golangci-lint-$(GOLANGCI_LINT_VER)

# Extra arguments for go test, e.g. make test TEST_ARGS='-run TestFoo -v'.
TEST_ARGS ?=
# How long each fuzz target runs in `make test-fuzz`.
FUZZ_TIME ?= 20s
# The release: the manager image and where the clusterctl artifacts go.
REGISTRY ?= ghcr.io/metal3-multitenancy
IMAGE_NAME ?= cluster-api-provider-metal3
TAG ?= dev
IMAGE ?= $(REGISTRY)/$(IMAGE_NAME):$(TAG)
RELEASE_DIR ?= out
GO_VERSION ?= 1.26

# Arguments for the manager in `make run`. A local run reaches pools' and
# workload clusters' API servers on this machine (kind, envtest), hence
# --identity-allow-loopback and --workload-allow-loopback; https is still
# required (add --identity-allow-http for a plain-http pool).
RUN_ARGS ?= --webhook-port=0 --insecure-diagnostics --diagnostics-address=127.0.0.1:8080 --health-addr=127.0.0.1:9440 \
	--identity-allow-loopback --workload-allow-loopback

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-22s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build and run

.PHONY: build
build: ## Build the manager into bin/manager and the HostClaim binder into bin/hostclaim-binder.
	go build -trimpath -o $(BIN_DIR)/manager .
	go build -trimpath -o $(BIN_DIR)/hostclaim-binder ./cmd/hostclaim-binder

.PHONY: run
run: ## Run the manager against the cluster of $KUBECONFIG (RUN_ARGS for flags).
	go run . $(RUN_ARGS)

##@ Release

.PHONY: release-manifests
release-manifests: ## Render the clusterctl artifacts into RELEASE_DIR (components for IMAGE, metadata, cluster templates).
	go run ./hack/release --out $(RELEASE_DIR) --image $(IMAGE)

.PHONY: docker-build
docker-build: ## Build the manager image IMAGE from this tree (needs a container engine).
	@docker info >/dev/null 2>&1 || { echo "docker-build needs a running container engine; 'docker info' fails here"; exit 1; }
	docker build --build-arg GO_VERSION=$(GO_VERSION) -t $(IMAGE) .

.PHONY: docker-push
docker-push: ## Push the manager image IMAGE.
	docker push $(IMAGE)

##@ Test

# The race detector on two cores: test/clusterctl's moves take some 8 of
# go test's default 10 minutes alone, more beside the other packages.
.PHONY: test
test: test-binaries ## Unit and envtest integration tests (builds the binaries they run on first use).
	KUBEBUILDER_ASSETS="$$(bash hack/tools-bin.sh envtest)" go test -race -count=1 -timeout 20m $(TEST_ARGS) ./...

# The tests would build these on first use too, but inside go test's
# per-package timeout; built here, a cold machine never runs into it.
.PHONY: test-binaries
test-binaries: ## Build (once) every binary the tests run: envtest, BMO, both IPAM providers; fetch cert-manager CRDs.
	@for tool in envtest bmo ipam incluster-ipam cert-manager-crds upstream-capm3-crds; do bash hack/tools-bin.sh $$tool >/dev/null; done

.PHONY: test-e2e
test-e2e: test-binaries ## End-to-end suite (test/e2e): Cluster API, the provider built from this tree and BMO over real API servers.
	KUBEBUILDER_ASSETS="$$(bash hack/tools-bin.sh envtest)" go test -tags e2e -count=1 -timeout 40m -v ./test/e2e/ -ginkgo.v $(E2E_ARGS)

.PHONY: demo
demo: test-binaries ## The whole provider live with Go alone: servers, BMO, CAPI, a pool and a cluster from templates/ (DEMO_ARGS=--exit-when-ready to end once every Machine runs).
	KUBEBUILDER_ASSETS="$$(bash hack/tools-bin.sh envtest)" go run ./test/e2e/demo $(DEMO_ARGS)

.PHONY: test-fuzz
# Fuzz targets are found by their source rather than by `go test -list`,
# which would compile every package's tests only to list nothing. A short
# -fuzzminimizetime keeps both workers fuzzing: minimising a long seed for
# the default minute each would stall the whole run at zero executions.
test-fuzz: ## Run every fuzz target for FUZZ_TIME each.
	@for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for target in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | sed 's/^func //'); do \
			echo "fuzz $$dir $$target ($(FUZZ_TIME))"; \
			go test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZ_TIME) -fuzzminimizetime 1s $$dir || exit 1; \
		done; \
	done

.PHONY: bench
bench: ## Run the benchmarks.
	KUBEBUILDER_ASSETS="$$(bash hack/tools-bin.sh envtest)" go test -run '^$$' -bench . -benchmem $(TEST_ARGS) ./...

.PHONY: bench-scale
bench-scale: test-binaries ## Scale, cost and crash-consistency scenarios against real API servers; prints a Markdown table, writes it and a plot to out/scale/ (BENCH_SCALE_ARGS, e.g. -sizes 100,250 -scenarios flow,association).
	KUBEBUILDER_ASSETS="$$(bash hack/tools-bin.sh envtest)" go run ./test/scale $(BENCH_SCALE_ARGS)

.PHONY: envtest-assets
envtest-assets: ## Build (once) kube-apiserver and etcd for envtest and print their directory.
	@bash hack/tools-bin.sh envtest

.PHONY: bmo
bmo: ## Build (once) the Bare Metal Operator and print its directory.
	@bash hack/tools-bin.sh bmo

.PHONY: ipam
ipam: ## Build (once) the Metal3 IP Address Manager and print its directory.
	@bash hack/tools-bin.sh ipam

.PHONY: incluster-ipam
incluster-ipam: ## Build (once) the CAPI in-cluster IPAM provider and print its directory.
	@bash hack/tools-bin.sh incluster-ipam

##@ Code generation

.PHONY: generate
generate: $(CONTROLLER_GEN) $(CONVERSION_GEN) ## Generate deepcopy functions and the v1beta1 conversions.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONVERSION_GEN) --output-file=zz_generated.conversion.go --go-header-file=hack/boilerplate.go.txt ./api/v1beta1

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and webhook manifests into config/.
	$(CONTROLLER_GEN) \
		paths=./... \
		crd:crdVersions=v1 output:crd:dir=./config/crd/bases \
		rbac:roleName=manager-role output:rbac:dir=./config/rbac \
		webhook output:webhook:dir=./config/webhook

.PHONY: verify
verify: check-tracked-files check-license-headers ## Fail if generated code or manifests are stale, go mod tidy would change go.mod, a build output is tracked or a licence header is missing.
	go mod tidy -diff
	$(MAKE) generate manifests
	@if [ -n "$$(git status --porcelain -- api config)" ]; then \
		git status --porcelain -- api config; git diff -- api config | head -100; \
		echo "generated files are stale: run 'make generate manifests' and commit the result"; exit 1; \
	fi

.PHONY: check-license-headers
check-license-headers: ## Fail if a Go file or script lacks the licence header (add it with: bash hack/check-license-headers.sh --fix).
	bash hack/check-license-headers.sh

.PHONY: check-tracked-files
check-tracked-files: ## Fail if git tracks an executable binary or a file over 1 MiB.
	bash hack/check-tracked-files.sh

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint with .golangci.yml.
	$(GOLANGCI_LINT) run ./...

.PHONY: fmt
fmt: ## gofmt every Go file.
	gofmt -s -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet.
	go vet ./...

##@ Tools

$(CONTROLLER_GEN):
	GOBIN=$(TOOLS_BIN_DIR) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VER)
	mv $(TOOLS_BIN_DIR)/controller-gen $@

$(CONVERSION_GEN):
	GOBIN=$(TOOLS_BIN_DIR) go install k8s.io/code-generator/cmd/conversion-gen@$(CONVERSION_GEN_VER)
	mv $(TOOLS_BIN_DIR)/conversion-gen $@

$(GOLANGCI_LINT):
	GOBIN=$(TOOLS_BIN_DIR) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VER)
	mv $(TOOLS_BIN_DIR)/golangci-lint $@

.PHONY: clean
clean: ## Remove built binaries, tools and release artifacts (not the envtest cache).
	rm -rf $(BIN_DIR) $(TOOLS_BIN_DIR) $(RELEASE_DIR)
