# Everything a developer or CI runs goes through these targets. Targets that
# need the Kubernetes binaries build them on first use (tools/build-k8s.sh).
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
CACHE     := $(CURDIR)/.cache
BIN       := $(CURDIR)/bin
TOOLS_BIN := $(CACHE)/bin
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen
CRDFIX         := $(TOOLS_BIN)/crdfix
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/dynamoctl/dynamo-operator/operator/config.Version=$(VERSION)
# Every binary is built as its image's is: static and -trimpath. The Go
# cache keys compiled packages by these flags, so one compiled copy of the
# dependencies serves the operator, the simulator, the image, the scenarios'
# releases and (with tools/align.sh) helm and controller-gen; the Kubernetes
# binaries and the LeaderWorkerSet controller share another. On a fresh
# machine each copy is minutes of compiling (docs/dev/fresh-machine.md).
GOBUILD   := CGO_ENABLED=0 $(GO) build -trimpath
# FULL=1 is what CI runs (.ci/run): the tests with the race detector, the
# long real-time tests, fuzzing and the drift checks. Without it `make test`
# is a newcomer's first run: the same tests but for the long ones (go test
# -short skips them), without the race detector, compiled with the binaries'
# flags so they reuse the dependencies `make sim` compiled.
FULL      ?=
ifeq ($(FULL),)
RACE      ?=
SHORT     ?= -short
# Test binaries run at once: on a machine doing nothing else, four fill the
# time the envtest packages spend waiting on their API servers. CI runs its
# three suites side by side and keeps go test's default (one per CPU).
TESTP     ?= -p 4
else
RACE      ?= -race
SHORT     ?=
TESTP     ?=
endif
# Without -race, tests and vet build as the binaries do (GOBUILD), so they
# share its compiled dependencies; -race needs cgo.
ifeq ($(RACE),)
GOFLAGS_TEST := CGO_ENABLED=0 GOFLAGS=-trimpath
endif
# -w: no DWARF in test binaries, a quarter less linking for each of about 45
# (nothing runs them under a debugger; panics and race reports do not use it).
# -vet=all: go test vets each package with every analyzer, as go vet does,
# inside the same build (make test needs no go vet of its own).
GOTEST    := $(GOFLAGS_TEST) $(GO) test $(RACE) -count=1 -ldflags=-w -vet=all
GOVET     := $(GOFLAGS_TEST) $(GO) vet $(RACE)

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: ## Build the operator manager into bin/dynamo-operator.
	$(GOBUILD) -ldflags "$(LDFLAGS)" -o $(BIN)/dynamo-operator ./operator/cmd/manager

.PHONY: k8s-bins
k8s-bins: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler (cached).
	@tools/build-k8s.sh >/dev/null

$(CONTROLLER_GEN): tools/go.mod tools/go.sum
	cd tools && $(GOBUILD) -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

HELM := $(TOOLS_BIN)/helm
# Built as released helm is, with the Kubernetes version it assumes when it
# asks no cluster (tools/helm/build.sh).
$(HELM): tools/helm/go.mod tools/helm/go.sum tools/helm/build.sh
	GO=$(GO) tools/helm/build.sh $(HELM)

.PHONY: helm
helm: $(HELM) ## Build the pinned helm CLI into .cache/bin (tools/helm/go.mod).

# kubectl, for the documentation's commands on the simulator (make
# features-sim): pinned to the control plane's Kubernetes version
# (tools/kubectl), so a machine needs no other copy.
KUBECTL := $(TOOLS_BIN)/kubectl
# kubectl version reports the Kubernetes release of its k8s.io/kubectl v0.x.y: v1.x.y.
KUBECTL_VERSION := $(shell awk '$$1 == "k8s.io/kubectl" {sub(/^v0\./, "v1.", $$2); print $$2}' tools/kubectl/go.mod)
$(KUBECTL): tools/kubectl/go.mod tools/kubectl/go.sum tools/kubectl/main.go
	cd tools/kubectl && $(GOBUILD) -mod=readonly -o $(KUBECTL) \
	  -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$(KUBECTL_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBECTL_VERSION)))" .

.PHONY: kubectl
kubectl: $(KUBECTL) ## Build the pinned kubectl into .cache/bin (tools/kubectl/go.mod), which the documentation's commands run with.

# The LeaderWorkerSet controller the simulator runs, and its CRDs beside it
# (the module's config/crd/bases, at the pinned version). Only the suites
# that run multinode graphs on the simulator need it beforehand: its cold
# build is long, and dynamo-sim up builds it in the background when missing.
LWS      := $(TOOLS_BIN)/lws-controller
$(LWS): tools/lws/go.mod tools/lws/go.sum tools/lws/build.sh
	GO=$(GO) tools/lws/build.sh

.PHONY: lws
lws: $(LWS) ## Build the pinned LeaderWorkerSet controller into .cache/bin and its CRDs into .cache/lws (tools/lws/go.mod).

# The chart's appVersion is the image tag and the operator version.
APP_VERSION := $(shell awk '/^appVersion:/ {gsub(/"/, "", $$2); print $$2}' chart/dynamo-platform/Chart.yaml)
IMAGE_REPO  ?= ghcr.io/dynamoctl/dynamo-operator
GOARCH_IMG  ?= $(shell $(GO) env GOARCH)

.PHONY: image
image: ## Build the operator image archive bin/dynamo-operator-<appVersion>.tar without Docker (docker load -i / kind load image-archive).
	GOOS=linux GOARCH=$(GOARCH_IMG) $(GOBUILD) \
	  -ldflags "-s -w -X github.com/dynamoctl/dynamo-operator/operator/config.Version=$(APP_VERSION)" \
	  -o $(BIN)/linux-$(GOARCH_IMG)/dynamo-operator ./operator/cmd/manager
	cd tools/image && $(GO) run . --binary $(BIN)/linux-$(GOARCH_IMG)/dynamo-operator --arch $(GOARCH_IMG) \
	  --repository $(IMAGE_REPO) --tag $(APP_VERSION) --out $(BIN)/dynamo-operator-$(APP_VERSION).tar
	@echo "$(BIN)/dynamo-operator-$(APP_VERSION).tar: $(IMAGE_REPO):$(APP_VERSION)"

# The fake Dynamo runtime: the simulator's fake worker as an image, tagged
# with every name of tools/image/runtime-images.txt (the runtime images the
# example graphs run), for kind.
.PHONY: runtime-image
runtime-image: ## Build the fake Dynamo runtime image archive bin/dynamo-runtime-<appVersion>.tar without Docker (kind load image-archive), under the names of tools/image/runtime-images.txt.
	GOOS=linux GOARCH=$(GOARCH_IMG) $(GOBUILD) -ldflags "-s -w" \
	  -o $(BIN)/linux-$(GOARCH_IMG)/dynamo-runtime ./sim/cmd/dynamo-runtime
	cd tools/image && $(GO) run . --binary $(BIN)/linux-$(GOARCH_IMG)/dynamo-runtime --arch $(GOARCH_IMG) \
	  --runtime-names runtime-images.txt --tag $(APP_VERSION) --out $(BIN)/dynamo-runtime-$(APP_VERSION).tar
	@echo "$(BIN)/dynamo-runtime-$(APP_VERSION).tar:"; grep -v '^#' tools/image/runtime-images.txt | sed 's/^/  /'

$(CRDFIX): tools/go.mod tools/go.sum $(wildcard tools/crdfix/*.go)
	cd tools && $(GOBUILD) -o $(CRDFIX) ./crdfix

##@ Generate

.PHONY: generate
# Generated into .cache/generate first, and a checked-in file is rewritten only
# when its content changes: a clean tree is never touched, so suites that
# compile the embedded CRDs can run while CI checks for drift (.ci/run).
GEN_OUT := .cache/generate
# Each API version's package gets its own deepcopy file. allowDangerousTypes:
# v1beta1 has Dynamo's float fields (a KV-transfer weight, a placement
# score), which controller-gen refuses by default.
API_VERSIONS := v1alpha1 v1beta1
generate: $(CONTROLLER_GEN) $(CRDFIX) ## Regenerate deepcopy code and the CRDs in crds/.
	rm -rf $(GEN_OUT) && mkdir -p $(GEN_OUT)/crds
	@for v in $(API_VERSIONS); do \
	  echo "$(CONTROLLER_GEN) object paths=./operator/api/$$v output:object:dir=$(GEN_OUT)/object/$$v"; \
	  $(CONTROLLER_GEN) object paths=./operator/api/$$v output:object:dir=$(GEN_OUT)/object/$$v; \
	done
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true paths=./operator/api/... output:crd:dir=$(GEN_OUT)/crds
	$(CRDFIX) $(GEN_OUT)/crds/*.yaml
	@for v in $(API_VERSIONS); do \
	  cmp -s $(GEN_OUT)/object/$$v/zz_generated.deepcopy.go operator/api/$$v/zz_generated.deepcopy.go || \
	    cp $(GEN_OUT)/object/$$v/zz_generated.deepcopy.go operator/api/$$v/zz_generated.deepcopy.go; \
	done
	@for f in $(GEN_OUT)/crds/*.yaml; do cmp -s $$f crds/$${f##*/} || cp $$f crds/; done
	@for f in crds/*.yaml; do [ -e $(GEN_OUT)/crds/$${f##*/} ] || rm -f $$f; done

.PHONY: verify-generate
verify-generate: generate ## Fail when regenerating changes the checked-in deepcopy code or CRDs.
	@changed=$$(git diff --name-only -- crds operator/api; git ls-files --others --exclude-standard -- crds operator/api); \
	if [ -n "$$changed" ]; then \
	  echo "generated files are out of date; run 'make generate' and commit:"; echo "$$changed"; \
	  git --no-pager diff --stat -- crds operator/api; exit 1; \
	fi

.PHONY: golden
golden: ## Rewrite operator/render/testdata/*.golden.yaml and testdata/buildjobs/ from the current rendering, and sim/nodes/testdata/*/output.yaml from the simulator's KWOK stages; review the diff.
	$(GOTEST) ./operator/render -run 'TestGolden(BuildJobs)?$$' -update
	$(GOTEST) ./sim/nodes -run 'TestStageGolden$$' -update

.PHONY: argocd-health
argocd-health: ## Rewrite chart/gitops/argocd/argocd-cm.yaml, the Argo CD health checks' ConfigMap patch, from chart/gitops/argocd/health.lua.
	$(GOTEST) ./chart/gitops -run TestArgoCDConfigMap -update

.PHONY: steps-doc
steps-doc: ## Rewrite features/STEPS.md, the catalogue of feature steps, from the steps registered in features/steps.
	$(GOTEST) ./features/steps -run TestStepCatalogue -update

.PHONY: docs
docs: ## Regenerate docs/reference (API from crds/, chart values from values.yaml, flags from operator/config).
	$(GO) run ./internal/docgen

.PHONY: verify-docs
verify-docs: ## Fail when docs/reference differs from what make docs would write.
	$(GO) run ./internal/docgen -check

.PHONY: verify-align
verify-align: ## Fail when a tool module could share more compiled dependencies than its go.mod says (tools/align.sh).
	tools/align.sh
	@changed=$$(git status --porcelain -- 'tools/go.*' 'tools/*/go.*'); \
	if [ -n "$$changed" ]; then \
	  echo "tool modules are not aligned; run tools/align.sh and commit:"; echo "$$changed"; exit 1; \
	fi

.PHONY: verify-golden
verify-golden: golden ## Fail when the golden files do not match the rendering (or were not committed).
	@changed=$$(git status --porcelain -- operator/render/testdata sim/nodes/testdata); \
	if [ -n "$$changed" ]; then \
	  echo "golden files are out of date; run 'make golden', review and commit:"; echo "$$changed"; exit 1; \
	fi

##@ Check

.PHONY: chart-lint
chart-lint: $(HELM) ## helm lint --strict the chart: cluster-wide, namespace-scoped, and every optional value on.
	$(HELM) lint --strict chart/dynamo-platform
	$(HELM) lint --strict chart/dynamo-platform --set dynamo-operator.namespaceRestriction.enabled=true
	$(HELM) lint --strict chart/dynamo-platform --values chart/charttest/testdata/everything-on.yaml

.PHONY: chart-test
chart-test: k8s-bins $(HELM) ## The chart against a real API server (chart/charttest) and the image archive test (tools/image).
	HELM=$(HELM) KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GOTEST) ./chart/...
	cd tools/image && $(GOTEST) ./...

.PHONY: fmt-check
fmt-check: ## Fail on Go files gofmt would change.
	@unformatted=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	if [ -n "$$unformatted" ]; then echo "not gofmt-formatted:"; echo "$$unformatted"; exit 1; fi

.PHONY: lint
lint: fmt-check ## gofmt and go vet, for the main module and the tools modules (make test vets through go test).
	$(GOVET) ./...
	cd tools && $(GOVET) ./...
	cd tools/image && $(GOVET) ./...
	cd tools/kind && $(GOVET) ./...

# What a newcomer's run leaves to CI (FULL=1): the drift checks, which keep
# the checked-in generated files honest rather than test the code, and
# fuzzing.
CI_CHECKS := $(if $(FULL),chart-lint verify-generate verify-golden verify-align verify-docs)
.PHONY: test
test: fmt-check $(CI_CHECKS) ## gofmt, go vet and every Go test (unit, envtest, the feature files on envtest) but the long ones; FULL=1 is CI's: with -race, the long tests, fuzzing and the drift checks.
	@# Fuzzing beside the Go tests: its instrumented build (minutes on a fresh
	@# machine) and run fill the time the tests spend waiting on API servers.
	$(MAKE) --no-print-directory -j2 test-go $(if $(FULL),fuzz)
	@[ -n "$(FULL)" ] || echo "make test passed; CI also runs the race detector, the long tests, fuzzing and the drift checks: make test FULL=1"

.PHONY: test-go
test-go: k8s-bins $(HELM) ## Every Go test: unit, envtest and the feature files against a real kube-apiserver.
	# 20m a package: operator/certs takes its API servers through certificate
	# rotations in real time, and beside the simulator suites it ran past 10m.
	HELM=$(HELM) KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GOTEST) $(SHORT) $(TESTP) -timeout 20m ./...
	cd tools && $(GOTEST) $(SHORT) $(TESTP) ./...
	cd tools/image && $(GOTEST) $(SHORT) $(TESTP) ./...
	cd tools/kind && $(GOTEST) $(SHORT) $(TESTP) ./...

# Each fuzz target of the webhook validators and of the v1beta1 conversion
# runs FUZZTIME; CI keeps it short, a longer local run is FUZZTIME=5m make fuzz.
FUZZTIME ?= 10s
FUZZ_PKGS := ./operator/webhooks/rules ./operator/api/v1beta1

.PHONY: fuzz
fuzz: ## Fuzz each webhook validator and conversion for FUZZTIME (default 10s): no input may panic or convert lossily.
	@# The targets are read from the source: go test -list would compile every
	@# dependency a third way (neither -race nor instrumented) only to list them.
	@for pkg in $(FUZZ_PKGS); do \
	  targets=$$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$pkg/*_test.go); \
	  [ -n "$$targets" ] || { echo "no fuzz targets in $$pkg"; exit 1; }; \
	  for target in $$targets; do \
	    echo "fuzzing $$target of $$pkg for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

.PHONY: features
features: k8s-bins ## Only the feature files; GODOG_TAGS=@api or GODOG_PATHS=api.feature narrows them.
	KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GOTEST) ./features/... -run TestFeatures -v -timeout 20m

.PHONY: features-sim
# PART=k/n runs the k-th of n parts (features/sim/parts), each on a simulator
# of its own; CI runs PART=1/2 and PART=2/2 side by side.
PART ?=
features-sim: k8s-bins sim-build $(HELM) $(LWS) $(KUBECTL) ## The feature files on the simulator: real workload controllers, scheduler, KWOK GPU nodes, probes, the operator installed by helm; then the documentation's commands on the same cluster. PART=k/n runs one part.
	$(if $(filter-out 1/%,$(PART)),,DYNAMO_SIM_LWS=1 KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GOTEST) ./sim/cluster/ -run TestLeaderWorkerSetController)
	DYNAMO_SIM_FEATURES=1 DYNAMO_FEATURES_PART=$(PART) KUBECTL=$(KUBECTL) KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GOTEST) ./features/sim/ -run '^(TestFeatures|TestDocs)$$' -v -timeout 70m

.PHONY: docs-sim
docs-sim: k8s-bins sim-build $(HELM) $(LWS) $(KUBECTL) ## Only the documentation's commands on a simulator (what make features-sim runs after the features).
	DYNAMO_SIM_FEATURES=1 KUBECTL=$(KUBECTL) KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GOTEST) ./features/sim/ -run '^TestDocs$$' -v -timeout 30m

.PHONY: scenarios
scenarios: k8s-bins sim-build $(HELM) $(LWS) ## Upgrade and fault scenarios on the simulator (scenarios/*.feature): releases built from git tags and the working tree, installed with helm; report in scenarios/report/.
	DYNAMO_SCENARIOS=1 HELM=$(HELM) KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GOTEST) ./scenarios/ -run TestScenarios -v -timeout 60m

##@ Run

SIM       := $(BIN)/dynamo-sim
SIM_GRAPH ?= examples/v1beta1/disagg.yaml
SIM_FLAGS ?=

.PHONY: sim-build
sim-build: build sim-cli ## Build the simulator CLI into bin/dynamo-sim (and the operator it runs).

.PHONY: sim-cli
sim-cli: ## Build the simulator CLI alone into bin/dynamo-sim (make kind runs its apply, wait, status and gpus).
	$(GOBUILD) -o $(SIM) ./sim/cmd/dynamo-sim

.PHONY: sim
sim: k8s-bins sim-build $(HELM) ## Simulated GPU cluster, the operator installed with helm install of chart/, apply SIM_GRAPH (an example graph of examples/), show it Ready; left running.
	@$(SIM) down >/dev/null
	KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(SIM) up --install helm --helm $(HELM) --image-tag $(VERSION) $(SIM_FLAGS)
	$(SIM) apply -f $(SIM_GRAPH)
	$(SIM) wait -f $(SIM_GRAPH)
	@$(SIM) status
	@echo
	@echo "The simulator keeps running:"
	@echo "  export KUBECONFIG=$$($(SIM) kubeconfig); kubectl get dgd,pods -o wide"
	@echo "  bin/dynamo-sim status | fault --help | workers"
	@echo "  make sim-down     (or bin/dynamo-sim down) stops it"

.PHONY: sim-down
sim-down: ## Stop the simulator started by make sim.
	@if [ -x $(SIM) ]; then $(SIM) down; else echo "no bin/dynamo-sim: nothing to stop"; fi

.PHONY: run
run: k8s-bins build ## Start a local control plane (etcd, kube-apiserver, CRDs) and the operator against it.
	$(GO) run ./internal/devcluster --operator $(BIN)/dynamo-operator --dir $(CACHE)/run

##@ kind

# A kind cluster on this machine's Docker: real kubelets, containerd,
# kube-proxy and CNI in containers (tools/kind/README.md). The node image is
# built here without a registry and cached by its inputs in KIND_CACHE,
# outside the clone so that a fresh clone (CI) finds it;
# KIND_NODE_IMAGE=kindest/node:<tag> uses a stock image instead (a machine
# that reaches its registry), then nothing is built.
KIND_DIR        := $(CACHE)/kind
KIND            := $(KIND_DIR)/bin/kind
KIND_CLUSTER    := $(KIND_DIR)/bin/cluster
KIND_NAME       ?= dynamo
KIND_KUBECONFIG ?= $(KIND_DIR)/$(KIND_NAME).kubeconfig
# The API server's audit log (the simulator's policy: the operators'
# writes), beside the kubeconfig: the feature suite counts writes from it.
KIND_AUDIT_DIR  ?= $(KIND_DIR)/$(KIND_NAME)-audit
KIND_NODE_IMAGE ?=
KIND_CACHE      ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/dynamo-operator/kind
export KIND_CACHE
# The graph make kind applies: the one make sim applies.
KIND_GRAPH      ?= $(SIM_GRAPH)
ETCD_TAG        := $(shell awk '$$1 == "require" && $$2 == "go.etcd.io/etcd/server/v3" {print $$3}' tools/etcd/go.mod)

$(KIND) $(KIND_CLUSTER) &: tools/kind/go.mod tools/kind/go.sum $(wildcard tools/kind/cluster/*.go)
	cd tools/kind && $(GOBUILD) -o $(KIND_DIR)/bin/ sigs.k8s.io/kind ./cluster

.PHONY: docker
docker: ## Install docker.io if missing and start dockerd with the capability-filtering runtime (idempotent).
	tools/kind/docker.sh

.PHONY: docker-down
docker-down: ## Stop the dockerd that make docker started (and its containerd).
	@if [ -f $(KIND_DIR)/dockerd.pid ] && kill $$(cat $(KIND_DIR)/dockerd.pid) 2>/dev/null; then \
	  echo "stopping dockerd"; while kill -0 $$(cat $(KIND_DIR)/dockerd.pid) 2>/dev/null; do sleep 0.5; done; \
	else echo "no dockerd started by make docker"; fi
	@rm -f $(KIND_DIR)/dockerd.pid

.PHONY: kind-image
kind-image: docker ## Build kind's node image (or load it from KIND_CACHE): Debian, containerd, the pinned Kubernetes, no registry.
	@tools/kind/node-image.sh >/dev/null

.PHONY: kind
kind: kind-operator kind-runtime ## The whole kind cluster: nodes with GPUs, the operator from its image (helm), the fake runtime, KIND_GRAPH applied and Ready; left running.
	$(SIM) apply --kubeconfig $(KIND_KUBECONFIG) -f $(KIND_GRAPH)
	$(SIM) wait --kubeconfig $(KIND_KUBECONFIG) --timeout 5m -f $(KIND_GRAPH)
	@KUBECONFIG=$(KIND_KUBECONFIG) kubectl get dgd,dcd,pods -o wide
	@echo
	@$(SIM) status --kubeconfig $(KIND_KUBECONFIG)
	@echo
	@echo "The kind cluster $(KIND_NAME) keeps running:"
	@echo "  export KUBECONFIG=$(KIND_KUBECONFIG); kubectl get dgd,pods -o wide"
	@echo "  make kind-down deletes it; make docker-down stops dockerd"

.PHONY: kind-cluster
kind-cluster: docker $(KIND) $(KIND_CLUSTER) sim-cli ## A kind cluster named KIND_NAME (1 control plane, 2 workers with 8 GPUs each) on the node image of make kind-image, or KIND_NODE_IMAGE.
	@if $(KIND) get clusters 2>/dev/null | grep -qx '$(KIND_NAME)'; then \
	  echo "kind cluster $(KIND_NAME) exists (make kind-down deletes it)"; \
	  $(KIND) export kubeconfig --name $(KIND_NAME) --kubeconfig $(KIND_KUBECONFIG) 2>/dev/null; \
	else \
	  image='$(KIND_NODE_IMAGE)'; etcd=; \
	  if [ -z "$$image" ]; then image=$$(tools/kind/node-image.sh); etcd=--etcd-tag=$(ETCD_TAG); fi; \
	  mkdir -p $(KIND_AUDIT_DIR) && $(SIM) audit-policy >$(KIND_AUDIT_DIR)/policy.yaml && \
	  $(KIND_CLUSTER) create --name $(KIND_NAME) --image "$$image" --kubeconfig $(KIND_KUBECONFIG) \
	    --audit-dir $(KIND_AUDIT_DIR) $$etcd; \
	fi
	$(SIM) gpus --kubeconfig $(KIND_KUBECONFIG)
	@echo "kubeconfig: $(KIND_KUBECONFIG)"

.PHONY: kind-operator
kind-operator: kind-cluster image $(HELM) ## The operator on the kind cluster: make image loaded into its nodes, the chart installed with helm (release dynamo-platform in dynamo-system).
	$(KIND) load image-archive $(BIN)/dynamo-operator-$(APP_VERSION).tar --name $(KIND_NAME)
	$(HELM) upgrade --install dynamo-platform chart/dynamo-platform --namespace dynamo-system --create-namespace \
	  --kubeconfig $(KIND_KUBECONFIG) --wait --timeout 5m
	KUBECONFIG=$(KIND_KUBECONFIG) kubectl get pods --namespace dynamo-system -o wide

.PHONY: kind-runtime
kind-runtime: kind-cluster runtime-image ## The fake Dynamo runtime image (make runtime-image) loaded into the kind cluster's nodes.
	$(KIND) load image-archive $(BIN)/dynamo-runtime-$(APP_VERSION).tar --name $(KIND_NAME)

.PHONY: features-kind
# The operator image's other tags the feature files install (install.feature's
# namespace-scoped release of another version): the simulator runs its
# operator under any tag, kind's nodes only under one they hold.
KIND_FEATURE_OPERATOR_TAGS := v2.0.0-beta

features-kind: kind-operator kind-runtime build $(HELM) $(KUBECTL) ## The feature files on the kind cluster (made or kept as make kind does, without its graph): real kubelets, probes, images; the operator's writes counted from its API server's audit log.
	@for node in $$($(KIND) get nodes --name $(KIND_NAME)); do for tag in $(KIND_FEATURE_OPERATOR_TAGS); do \
	  docker exec $$node ctr --namespace k8s.io images tag --force $(IMAGE_REPO):$(APP_VERSION) $(IMAGE_REPO):$$tag >/dev/null; \
	done; done
	DYNAMO_SIM_FEATURES=1 DYNAMO_FEATURES_KUBECONFIG=$(KIND_KUBECONFIG) DYNAMO_FEATURES_KIND=$(KIND_NAME) \
	  DYNAMO_FEATURES_AUDIT_LOG=$(KIND_AUDIT_DIR)/audit.log KUBECTL=$(KUBECTL) \
	  $(GOTEST) ./features/sim/ -run '^TestFeatures$$' -v -timeout 90m

.PHONY: kind-down
kind-down: ## Delete the kind cluster KIND_NAME.
	@if [ -x $(KIND_CLUSTER) ] && docker info >/dev/null 2>&1; then \
	  $(KIND_CLUSTER) delete --name $(KIND_NAME) --kubeconfig $(KIND_KUBECONFIG); \
	else echo "no Docker engine or no cluster tool: nothing to delete"; fi

##@ Measure

BENCH_FLAGS ?=
# BENCH_TIMEOUT: go test's limit for one benchmark run. 150m covers N=2,000 on
# envtest (35 minutes on 2 cores); on the simulator's control plane N=2,000
# needs more on 2 cores (docs/dev/performance.md): BENCH_TIMEOUT=6h.
BENCH_TIMEOUT ?= 150m
.PHONY: bench
bench: k8s-bins ## Scale benchmark: 500 graphs x 4 services, shipped defaults, against raw-write floors (BENCH_FLAGS='-graphs=100 -steady=10s', '-sim' on the simulator's control plane, '-graphs=2000'; BENCH_TIMEOUT=150m).
	KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GO) test -run '^$$' -bench BenchmarkGraphs -benchtime 1x -timeout $(BENCH_TIMEOUT) \
	  ./operator/controllers/benchmarks/ -args $(BENCH_FLAGS)

.PHONY: bench-handover
bench-handover: k8s-bins ## Hand-over latency between a cluster-wide and a namespace-scoped operator (BENCH_FLAGS='-handovers=20 -graphs=20').
	KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GO) test -run '^$$' -bench BenchmarkHandover -benchtime 1x -timeout 30m \
	  ./operator/scope/benchmarks/ -args $(BENCH_FLAGS)

SIM_BENCH_FLAGS ?=
.PHONY: bench-prober
bench-prober: k8s-bins ## Simulator: the prober's CPU with 1,000 probed pods (SIM_BENCH_FLAGS='-probed-pods=100 -probe-period=1').
	KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GO) test -run '^$$' -bench BenchmarkProber -benchtime 1x -timeout 60m \
	  ./sim/bench/ -args $(SIM_BENCH_FLAGS)

.PHONY: bench-sim
bench-sim: k8s-bins ## Simulator: cold start, then 1,000 GPU nodes and 10,000 pods Ready (SIM_BENCH_FLAGS='-nodes=100 -pods=1000').
	KUBEBUILDER_ASSETS=$$(tools/build-k8s.sh) $(GO) test -run '^$$' -bench BenchmarkSimScale -benchtime 1x -timeout 60m \
	  ./sim/bench/ -args $(SIM_BENCH_FLAGS)
