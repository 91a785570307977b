#!/bin/sh
# WANT_JSON
# Copyright: gopve.proxmox developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Internal module of gopve.proxmox: on the fallback path (async, su, ...; see
# plugins/plugin_utils/gopve_action.py) the action plugins run it instead of
# the Go binary itself, so that Ansible's own module execution (tmpdir,
# become, environment, async, result parsing) handles everything. Its only
# job is to exec the cached binary named by the first key of the args file:
#   {"_gopve_binary": "/home/u/.ansible/gopve/<sha256>/gopve", ...}
# The plugin puts that key first, and Python writes the args as JSON on one
# line, so reading the path needs no JSON parser: the plugin only accepts
# paths that JSON does not escape (printable ASCII, no quote or backslash).
# Right before exec it re-checks what the plugin's probe checked: the file
# belongs to the user running it, is not a symlink, and its SHA-256 is the
# <sha256> directory it sits in (a file changed since the probe is not run).
# Anything else (a user calling this module directly) fails with a clear message.

args=$1
fail() {
  printf '{"failed": true, "changed": false, "msg": "%s"}\n' "$1"
  exit 1
}

[ -r "$args" ] || fail "gopve_exec: cannot read the arguments file"
# dd reads one block, however long the args file is (read(1) would loop
# byte by byte over large arguments).
head=$(dd if="$args" bs=4096 count=1 2>/dev/null)
prefix='{"_gopve_binary": "'
case $head in
  "$prefix"*) ;;
  *) fail "gopve.proxmox.gopve_exec is internal to the gopve.proxmox collection and cannot be called directly: use its modules (see ansible-doc -l gopve.proxmox)" ;;
esac
rest=${head#"$prefix"}
bin=${rest%%\"*}
case $bin in
  /*/gopve) ;;
  *) fail "gopve_exec: the binary path in the arguments is not an absolute <cache>/<sha256>/gopve" ;;
esac
want=${bin%/gopve}
want=${want##*/}
case $want in
  *[!0-9a-f]*) fail "gopve_exec: $bin does not sit in a directory named after its sha256" ;;
esac
[ ${#want} -eq 64 ] || fail "gopve_exec: $bin does not sit in a directory named after its sha256"
if [ -L "$bin" ] || [ ! -f "$bin" ] || [ ! -x "$bin" ]; then
  fail "gopve_exec: the cached binary $bin is missing or not executable (was the cache removed while the play ran?)"
fi
[ -O "$bin" ] || fail "gopve_exec: the cached binary $bin does not belong to the user the module runs as: not running it"
if command -v sha256sum >/dev/null 2>&1; then got=$(sha256sum "$bin")
elif command -v shasum >/dev/null 2>&1; then got=$(shasum -a 256 "$bin")
elif command -v sha256 >/dev/null 2>&1; then got=$(sha256 -r "$bin")
elif command -v openssl >/dev/null 2>&1; then got=$(openssl dgst -sha256 -r "$bin")
else fail "gopve_exec: no sha256 tool on this host (sha256sum, shasum, sha256 or openssl)"
fi
got=${got%%[ *]*}
[ "$got" = "$want" ] || fail "gopve_exec: the cached binary $bin no longer matches its sha256 (changed since the cache check): not running it"
exec "$bin" "$args"
