#!/bin/sh
# WANT_JSON
# Copyright: gopve.proxmox developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Internal module of gopve.proxmox: the action plugins (plugins/plugin_utils/
# gopve_action.py) run it instead of the Go binary itself, so that Ansible's
# own module execution (tmpdir, become, environment, async, result parsing)
# handles everything. Its only job is to exec the cached binary named by the
# first key of the args file:
#   {"_gopve_binary": "/home/u/.ansible/gopve/<sha256>/gopve", ...}
# The plugin puts that key first, and Python writes the args as JSON on one
# line, so reading the path needs no JSON parser: the plugin only accepts
# paths that JSON does not escape (printable ASCII, no quote or backslash).
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
  /*) ;;
  *) fail "gopve_exec: the binary path in the arguments is not absolute" ;;
esac
[ -f "$bin" ] && [ -x "$bin" ] || fail "gopve_exec: the cached binary $bin is missing or not executable (was the cache removed while the play ran?)"
exec "$bin" "$args"
