# gopve.proxmox — build, package, test.
#
# The two commands a newcomer needs (fresh Debian 12, as root):
#   make demo   # build, start the built-in lab, run the collection against it
#   make test   # lint, then every test: Go unit + lab fidelity + ansible-playbook integration
# Both install the Debian packages they need first (make deps).

SHELL      := /bin/bash
GO         ?= go
VERSION    := $(shell sed -n 's/^version: *//p' galaxy.yml)
ARTIFACT   := collection/gopve-proxmox-$(VERSION).tar.gz
# Tags of every shipped (and integration-tested) binary: nethttpomithttp2
# leaves net/http's HTTP/2 half out (about 0.35 MB of each binary, issue 19's
# 10 MB budget): pveproxy (pve-http-server's PVE::APIServer::AnyEvent, an
# HTTP/1.x server) never negotiates HTTP/2, so the modules never use it.
TAGS_REL   := nethttpomithttp2
GOFLAGS_REL := -trimpath -ldflags '-s -w -X github.com/gopve/proxmox/modules-src/ansible.Version=$(VERSION)'
# uname vocabulary (system_machine), so the action plugin needs no mapping table.
PLATFORMS  := linux/amd64:linux_x86_64 linux/arm64:linux_aarch64 darwin/amd64:darwin_x86_64 darwin/arm64:darwin_arm64
HOST_TAG   := $(shell uname -s | tr A-Z a-z)_$(shell uname -m)
GO_SRC     := $(shell find modules-src -name '*.go' 2>/dev/null) go.mod go.sum

.PHONY: all deps roots build build-test dist collection install test test-unit test-integration lint bench demo lab-up lab-down clean

all: build

deps:
	@./hack/deps.sh

# build: the binary for this machine only (enough for local runs and tests).
build: bin/gopve_$(HOST_TAG)

bin/gopve_$(HOST_TAG): $(GO_SRC)
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -tags $(TAGS_REL) $(GOFLAGS_REL) -o $@ ./modules-src/cmd/gopve

# build-test: the binary with the test-only module gopve_test, for
# tests/integration; kept out of bin/ so it can never ship.
TEST_BIN := tests/integration/out/bin/gopve_$(HOST_TAG)
build-test: $(TEST_BIN)

$(TEST_BIN): $(GO_SRC)
	@mkdir -p $(dir $@)
	CGO_ENABLED=0 $(GO) build -tags gopve_testmodule,$(TAGS_REL) $(GOFLAGS_REL) -o $@ ./modules-src/cmd/gopve

# dist: one static multi-call binary per shipped platform.
dist: $(GO_SRC)
	@mkdir -p bin
	@set -e; for p in $(PLATFORMS); do \
	  goos=$${p%%/*}; rest=$${p#*/}; goarch=$${rest%%:*}; tag=$${p##*:}; \
	  echo "build bin/gopve_$$tag"; \
	  CGO_ENABLED=0 GOOS=$$goos GOARCH=$$goarch $(GO) build -tags $(TAGS_REL) $(GOFLAGS_REL) -o bin/gopve_$$tag ./modules-src/cmd/gopve; \
	done

# collection: the Galaxy artifact in collection/, with all four platforms.
collection: dist
	@rm -f collection/*.tar.gz
	ansible-galaxy collection build --force --output-path collection .
	@./hack/check-artifact.sh $(ARTIFACT)

install: collection
	ansible-galaxy collection install --force $(ARTIFACT)

# make test: lint first (the quickest to fail), then go test beside the
# script suites (integration, roles, slicing, bench smoke). Measured per
# part in cpuacct cgroups (lab nodes and controllers included, 2026-12-06):
# go test is about 1,400 CPU-seconds and the scripts about 600, against
# 2,449 s of wall time one after another: most of a lab test's time is
# waiting (task clocks, the Perl tools' start-up, Ansible's round trips),
# not computing, so the two halves overlap on 2 cores instead of queueing.
# --output-sync=line: each step's output is printed whole when it ends.
test: deps lint roots
	@$(MAKE) --no-print-directory -j2 --output-sync=line test-unit test-integration

# The Debian 13 root (PVE 9 lab nodes, the ansible-core 2.19 controller) is
# built once, up front, so no test spends its time limit waiting for it.
roots: deps
	@./hack/debian-root.sh trixie >/dev/null

# Lab end-to-end tests start real nodes: a package can take several minutes
# on a loaded 2-core machine, beyond go test's default 10-minute limit;
# lab/truth, the longest, hit 30 minutes once on a loaded machine when its
# tests ran one after another (they now run side by side), so 45 leaves
# room without hiding a hang from CI's 90 minutes.
# The lab tests take gopve and labtools from $$GOPVE_TEST_LABBIN, built here
# once, instead of building both for each lab (lab/labtest, EnvPrebuilt).
# hack/gotest-report.py prints what plain go test prints, then the slowest
# tests: a CI log says where its time went. Its exit status is the run's.
# -p 3, one package more than the 2 cores: the module packages' lab tests
# wait on task clocks and the Perl tools' start-up costs, and with two
# packages at a time a fifth of the cores sat idle in go test's second half
# (vmstat, 2026-12-05).
test-unit: roots
	@bins=$$(mktemp -d) && trap 'rm -rf "$$bins"' EXIT && \
	CGO_ENABLED=0 $(GO) build -o "$$bins/gopve" ./modules-src/cmd/gopve && \
	CGO_ENABLED=0 $(GO) build -o "$$bins/labtools" ./modules-src/cmd/labtools && \
	GOPVE_TEST_LABBIN="$$bins" ./hack/timed.sh "go test" bash -o pipefail -c \
	  '$(GO) test -json -count=1 -p 3 -timeout 45m ./modules-src/... | python3 hack/gotest-report.py'

# The script suites one after another (beside go test, see test). Three
# chains side by side (go test; integration and roles; slicing and the
# bench smoke) once took longer, not shorter (stop 34: the load stood at 16,
# when the secrets tests' sampler still forked three processes per node 100
# times a second). Each step prints its wall and CPU time (hack/timed.sh),
# so a CI log says where its minutes went.
test-integration: deps roots
	@./hack/timed.sh tests/integration ./tests/integration/run.sh
	@./hack/timed.sh tests/roles ./tests/roles/run.sh
	@./hack/timed.sh tests/slicing ./tests/slicing/run.sh
	@./hack/timed.sh tests/bench ./tests/bench/run.sh

lint: deps
	@GO=$(GO) ./hack/timed.sh lint ./hack/lint.sh

bench:
	./hack/bench.sh
	./hack/bench-size.sh
	./hack/bench-local.sh
	./hack/bench-clone.sh
	./hack/bench-site.sh
	./hack/bench-scale.sh

demo: deps build
	./hack/demo.sh

LAB := /var/lib/gopve/bin/lab
$(LAB): $(GO_SRC)
	@mkdir -p $(dir $@)
	CGO_ENABLED=0 $(GO) build -o $@ ./modules-src/cmd/lab

# lab-up / lab-down: the lab alone (PVE=8|9, NODES=n), for your own playbooks.
lab-up: deps $(LAB)
	$(LAB) up --nodes $(or $(NODES),3) --pve $(or $(PVE),9)

lab-down: $(LAB)
	$(LAB) down

clean:
	rm -rf bin collection/*.tar.gz
