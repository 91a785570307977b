#!/usr/bin/env bash
# ansible-test sanity, as Galaxy and Automation Hub run it on a collection,
# offline and in seconds (make lint; issue 27 §3). ansible-test wants the
# collection at .../ansible_collections/gopve/proxmox and resolves symlinks
# to find it, so the working tree's files (tracked and new, not ignored)
# are copied into a temporary tree. The tests run with the host's Python
# (Debian 12's /usr/bin/python3 and its ansible-core 2.14), --local (no
# containers), and with hack/ansible_test_offline.py filling the per-test
# virtual environments from Debian's packages instead of PyPI. Which tests
# cannot run offline, and why: README.md, "Lint and ansible-test sanity".
# Extra arguments go to ansible-test (e.g. --test shebang).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
coll=$work/ansible_collections/gopve/proxmox
mkdir -p "$coll" "$work/home"

cd "$REPO"
# -P keeps symlinks as symlinks and --preserve=mode the execute bits: the
# symlinks and shebang tests look at both.
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do
    if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
  done | xargs -0 cp --parents -P --preserve=mode -t "$coll"

version=$($PY -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cd "$coll"
# HOME: the environments ansible-test makes (~/.ansible/test) stay in the
# temporary tree, never mixed with those of a networked run.
HOME=$work/home $PY "$REPO/hack/ansible_test_offline.py" sanity --local --python "$version" \
  --python-interpreter "$PY" --color no "$@"
