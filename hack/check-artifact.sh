#!/usr/bin/env bash
# check-artifact.sh ARTIFACT: refuse a Galaxy tarball that would fail users.
#
# It must hold the four platform binaries bin/gopve_<system>_<machine>,
# executable, each of the format its name promises (read from the ELF or
# Mach-O header, so a Linux binary under a darwin name is caught), the shared
# action plugin code and the wrapper module, the Go sources (GPL: the
# corresponding source travels with the binaries), an execution-environment
# file that asks for nothing beyond ansible-core, and no test-only module;
# and it must stay under Galaxy's 20 MB upload limit.
set -euo pipefail

artifact=${1:?usage: check-artifact.sh ARTIFACT}
limit=$((20 * 1000 * 1000))  # Galaxy's limit is 20 MB; count in decimal to stay safely below it
[ -f "$artifact" ] || { echo "check-artifact: $artifact does not exist (run make collection)" >&2; exit 1; }

errors=()
err() { errors+=("$*"); }

size=$(stat -c %s "$artifact")
printf "check-artifact: %s is %d bytes (%s MB, limit 20 MB)\n" "$artifact" "$size" "$(awk -v s="$size" "BEGIN{printf \"%.1f\", s/1000000}")"
[ "$size" -lt "$limit" ] || err "artifact is $size bytes, over Galaxy's 20 MB limit"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$artifact" -C "$work" || { echo "check-artifact: $artifact is not a readable tar.gz" >&2; exit 1; }

# header_of FILE: "elf <machine>" or "macho <cputype>" from the first bytes.
header_of() {
  local b
  b=$(od -An -tx1 -N20 "$1" | tr -d ' \n')
  case $b in
    7f454c4602*)  # ELF, 64-bit; e_machine is the little-endian u16 at offset 18
      echo "elf ${b:38:2}${b:36:2}" ;;
    cffaedfe*)    # Mach-O 64-bit little-endian; cputype is the u32 at offset 4
      echo "macho ${b:14:2}${b:12:2}${b:10:2}${b:8:2}" ;;
    *) echo "unknown ${b:0:8}" ;;
  esac
}

declare -A want=(
  [linux_x86_64]="elf 003e"         # EM_X86_64
  [linux_aarch64]="elf 00b7"        # EM_AARCH64
  [darwin_x86_64]="macho 01000007"  # CPU_TYPE_X86_64
  [darwin_arm64]="macho 0100000c"   # CPU_TYPE_ARM64
)
for tag in linux_x86_64 linux_aarch64 darwin_x86_64 darwin_arm64; do
  f=$work/bin/gopve_$tag
  if [ ! -f "$f" ]; then err "bin/gopve_$tag is missing (make dist builds every platform)"; continue; fi
  [ -x "$f" ] || err "bin/gopve_$tag is not executable"
  got=$(header_of "$f")
  [ "$got" = "${want[$tag]}" ] || err "bin/gopve_$tag is '$got', want '${want[$tag]}'"
  printf '  bin/gopve_%-14s %9d bytes  %s\n' "$tag" "$(stat -c %s "$f")" "$got"
done
extra=$(if cd "$work"; then find bin -type f ! -name 'gopve_linux_x86_64' ! -name 'gopve_linux_aarch64' \
  ! -name 'gopve_darwin_x86_64' ! -name 'gopve_darwin_arm64' 2>/dev/null || true; fi)
[ -z "$extra" ] || err "unexpected files in bin/: $extra"

for f in MANIFEST.json FILES.json README.md LICENSE CHANGELOG.md meta/runtime.yml \
  plugins/plugin_utils/gopve_action.py plugins/modules/gopve_exec.sh plugins/modules/gopve_exec.yml \
  plugins/doc_fragments/api.py plugins/doc_fragments/created_earlier.py \
  go.mod go.sum modules-src/cmd/gopve; do
  [ -e "$work/$f" ] || err "$f is missing"
done
# Modules are not executable (ansible-test sanity's shebang check): Ansible
# runs the wrapper through its shebang's interpreter.
[ ! -x "$work/plugins/modules/gopve_exec.sh" ] || err "plugins/modules/gopve_exec.sh is executable (ansible-test sanity: modules must not be)"
# The test-only module must never ship (built with -tags gopve_testmodule).
for f in plugins/modules/gopve_test.py plugins/action/gopve_test.py; do
  [ ! -e "$work/$f" ] || err "$f is test-only and must not ship"
done
for f in "$work"/bin/gopve_*; do
  [ -f "$f" ] && grep -q 'gopve_test' "$f" && err "$(basename "$f") contains the test module gopve_test"
done
leaked=$(cd "$work" && find . \( -name '*.test' -o -path './tests/integration/out*' -o -path './.git*' -o -path './collection/*' \) -print | head -5)
[ -z "$leaked" ] || err "build leftovers in the artifact: $leaked"

# The execution environment's view (ansible-builder's introspect,
# CollectionDefinition): meta/execution-environment.yml, version 1, whose
# dependencies name files relative to the collection root, in the artifact;
# each must list no requirement (comments only): the collection needs
# ansible-core alone.
ee=$(python3 - "$work" 2>&1 <<'PY'
import os, sys, yaml
root = sys.argv[1]
try:
    d = yaml.safe_load(open(os.path.join(root, "meta", "execution-environment.yml")))
except OSError as e:
    sys.exit(f"meta/execution-environment.yml: {e.strerror}")
if d.get("version") != 1:
    sys.exit(f"meta/execution-environment.yml: version {d.get('version')!r}, introspect reads 1")
for key, rel in (d.get("dependencies") or {}).items():
    if key not in ("python", "system") or not isinstance(rel, str) or os.path.isabs(rel):
        sys.exit(f"meta/execution-environment.yml: dependencies.{key} must be python/system naming a relative file, got {rel!r}")
    try:
        lines = [l for l in open(os.path.join(root, rel)) if l.strip() and not l.startswith("#")]
    except OSError as e:
        sys.exit(f"meta/execution-environment.yml: dependencies.{key}: {rel}: {e.strerror}")
    if lines:
        sys.exit(f"meta/execution-environment.yml: dependencies.{key}: {rel} lists {lines[0].strip()!r}; the collection needs ansible-core alone")
PY
) || err "$ee"

if [ ${#errors[@]} -gt 0 ]; then
  printf 'check-artifact: FAIL: %s\n' "${errors[@]}" >&2
  exit 1
fi
echo "check-artifact: OK"
