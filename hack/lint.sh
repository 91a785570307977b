#!/usr/bin/env bash
# make lint: Go formatting, vet and staticcheck (the test-only module's build
# tag too), the roles' and playbooks' YAML and ansible-lint, and
# ansible-test sanity offline (README: Lint). Stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
x() { echo "$*"; "$@"; }
unformatted=$(gofmt -l modules-src)
[ -z "$unformatted" ] || { echo "$unformatted"; echo 'gofmt: files above need formatting'; exit 1; }
x "$GO" vet ./modules-src/...
x "$GO" tool staticcheck ./modules-src/...
# the test-only module (build tag) is compiled for tests/integration: lint it too
x "$GO" vet -tags gopve_testmodule ./modules-src/...
x "$GO" tool staticcheck -tags gopve_testmodule ./modules-src/...
x yamllint -s roles playbooks meta galaxy.yml
x ansible-lint -q roles playbooks
# ansible-test sanity, what Galaxy runs, offline with Debian's packages
x ./hack/sanity.sh
