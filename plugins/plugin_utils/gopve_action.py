# -*- coding: utf-8 -*-
# Copyright: gopve.proxmox developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared action plugin of every gopve.proxmox module.

The modules are one Go multi-call binary per platform, shipped in the
collection's ``bin/`` directory. Per task this plugin:

1. runs one small ``sh`` script on the target (the delegated host when
   ``delegate_to`` is used) that both reads ``uname -sm`` and checks the host's
   binary cache, ``~/.ansible/gopve/<sha256>/gopve`` of the user the module
   will run as (the become user when ``become`` is on). The cached file is
   re-hashed on every check: a corrupt or tampered entry is deleted, never run;
2. transfers the binary only when the cache misses, and installs it into the
   cache atomically (temporary name, hash check, ``mv``), so a play of many
   tasks sends it once per host and parallel forks never run a half-written
   file;
3. runs it through the tiny ``WANT_JSON`` wrapper module ``gopve_exec`` with
   the stock ``_execute_module``, so check mode, diff, become, ``environment:``,
   async and Ansible's result parsing behave exactly as for any module.

The host-side cache directory can be moved with the host variable
``gopve_remote_cache`` (an absolute path or one starting with ``~/``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re
import shlex

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash

display = Display()

# (uname -s, uname -m) -> platform tag of bin/gopve_<tag>. The tags use the
# uname vocabulary (docs/contracts.md). Linux on 64-bit ARM says aarch64, but
# some kernels and emulators say arm64: both run the same binary.
PLATFORMS = (
    ("Linux", "x86_64", "linux_x86_64"),
    ("Linux", "aarch64", "linux_aarch64"),
    ("Linux", "arm64", "linux_aarch64"),
    ("Darwin", "x86_64", "darwin_x86_64"),
    ("Darwin", "arm64", "darwin_arm64"),
)
SHIPPED_TAGS = ("linux_x86_64", "linux_aarch64", "darwin_x86_64", "darwin_arm64")

# The wrapper module that execs the cached binary (plugins/modules/gopve_exec.sh).
WRAPPER_MODULE = "gopve.proxmox.gopve_exec"
# Keys the plugin injects; the wrapper reads _gopve_binary from the start of
# the args file, so it must stay the first key.
BINARY_KEY = "_gopve_binary"
MODULE_KEY = "_gopve_module"
RESERVED_PREFIX = "_gopve_"

DEFAULT_CACHE = "~/.ansible/gopve"
CACHE_VAR = "gopve_remote_cache"
MARK = "GOPVE_PROBE "

# The wrapper copies the binary path verbatim out of the JSON args file, so
# the path may hold no character that JSON escapes (quote, backslash,
# control and non-ASCII characters).
_SAFE_PATH = re.compile(r"^/[\x20-\x21\x23-\x5b\x5d-\x7e]*$")

_SHA256_FN = r"""
gopve_sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"
  elif command -v shasum >/dev/null 2>&1; then shasum -a 256 "$1"
  elif command -v sha256 >/dev/null 2>&1; then sha256 -r "$1"
  elif command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r "$1"
  else return 127
  fi 2>/dev/null
}
gopve_hash_of() {
  set -- $(gopve_sha256 "$1") && printf '%s' "$1"
}
"""


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cached_sha256(path, memo_dir):
    """sha256 of a local binary, memoised in memo_dir for the rest of the run.

    Every task hashes every shipped binary (the probe needs them all before
    the platform is known): tens of milliseconds per task. Ansible forks a
    worker per task, so an in-memory cache would not survive; the memo lives
    in the run's local tmp dir (ANSIBLE_LOCAL_TEMP, private to the user,
    removed at exit), keyed by the file's identity and mtime, so a rebuilt
    binary gets hashed again. memo_dir None disables the memo.
    """
    if not memo_dir:
        return sha256_file(path)
    st = os.stat(path)
    ident = "%s|%d|%d|%d|%d" % (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    memo = os.path.join(memo_dir, "gopve-sha256-" + hashlib.sha256(ident.encode()).hexdigest()[:32])
    try:
        with open(memo) as f:
            value = f.read().strip()
        if re.match(r"^[0-9a-f]{64}$", value):
            return value
    except (IOError, OSError):
        pass
    value = sha256_file(path)
    tmp = "%s.%d" % (memo, os.getpid())
    try:
        with open(tmp, "w") as f:
            f.write(value)
        os.rename(tmp, memo)  # atomic: forks racing on the same memo both write the same value
    except (IOError, OSError):
        pass
    return value


def local_tmp_dir():
    """The run's controller-side tmp dir (created by Ansible), or None."""
    try:
        from ansible import constants as C
        path = C.DEFAULT_LOCAL_TMP
    except Exception:  # pylint: disable=broad-except  (an optimisation only)
        return None
    return path if path and os.path.isdir(path) else None


def platform_list():
    """Human list of what the collection ships, for error messages."""
    by_tag = {}
    for system, machine, tag in PLATFORMS:
        by_tag.setdefault(tag, []).append("%s %s" % (system, machine))
    return ", ".join("%s (%s)" % (tag, " / ".join(by_tag[tag])) for tag in SHIPPED_TAGS)


def probe_script(cache_root, hashes):
    """The one round trip before a task: platform, cache lookup, cache check.

    hashes maps platform tag -> sha256 of the binary this controller holds
    (tags missing from this build are absent). Prints GOPVE_PROBE key=value
    lines; parse them with parse_probe().
    """
    cases = "\n".join('  "%s %s") tag=%s ;;' % p for p in PLATFORMS)
    wants = "\n".join("  %s) want=%s ;;" % (tag, hashes[tag]) for tag in SHIPPED_TAGS if tag in hashes)
    # strip(): Ansible appends " && sleep 0"; a trailing newline would make
    # that a syntax error after the script ran.
    return (r"""
cache_root=%(root)s
%(sha)s
un=$(uname -sm 2>/dev/null) || un=''
echo "%(mark)suname=$un"
tag=''
case "$un" in
%(cases)s
esac
echo "%(mark)stag=$tag"
want=''
case "$tag" in
%(wants)s
  *) want='' ;;
esac
[ -n "$want" ] || exit 0
case "$cache_root" in
  '~') cache_root=$HOME ;;
  '~/'*) cache_root=$HOME/${cache_root#'~/'} ;;
esac
bin=$cache_root/$want/gopve
echo "%(mark)spath=$bin"
if ! gopve_sha256 /dev/null >/dev/null; then
  echo "%(mark)serror=no sha256 tool on this host (sha256sum, shasum, sha256 or openssl)"
  exit 0
fi
if [ -L "$bin" ] || [ -e "$bin" ]; then
  if [ ! -L "$bin" ] && [ -f "$bin" ] && [ -x "$bin" ] && [ "$(gopve_hash_of "$bin")" = "$want" ]; then
    echo "%(mark)sstatus=hit"
  else
    rm -f "$bin"
    echo "%(mark)sstatus=corrupt"
  fi
else
  echo "%(mark)sstatus=miss"
fi
""" % dict(root=shlex.quote(cache_root), sha=_SHA256_FN, mark=MARK, cases=cases, wants=wants)).strip()


def install_script(src, dest, want):
    """Move a transferred binary into the cache: copy under a temporary name,
    check its hash, then rename, so a concurrent reader sees the whole file or
    nothing. Runs as the user the module will run as."""
    return (r"""
umask 077
%(sha)s
src=%(src)s
dest=%(dest)s
want=%(want)s
dir=${dest%%/*}
mkdir -p "$dir" || { echo "%(mark)serror=cannot create the cache directory $dir"; exit 0; }
tmp=$dir/.gopve.$$
if ! cp "$src" "$tmp"; then
  rm -f "$tmp"; echo "%(mark)serror=cannot copy the binary into $dir"; exit 0
fi
got=$(gopve_hash_of "$tmp")
if [ "$got" != "$want" ]; then
  rm -f "$tmp"; echo "%(mark)serror=the transferred binary has sha256 $got, expected $want"; exit 0
fi
chmod 0700 "$tmp" && mv -f "$tmp" "$dest" || { rm -f "$tmp"; echo "%(mark)serror=cannot install $dest"; exit 0; }
echo "%(mark)sstatus=installed"
""" % dict(sha=_SHA256_FN, src=shlex.quote(src), dest=shlex.quote(dest), want=shlex.quote(want), mark=MARK)).strip()


def parse_probe(stdout):
    """GOPVE_PROBE key=value lines -> dict (first value of each key wins)."""
    out = {}
    for line in to_text(stdout).splitlines():
        if line.startswith(MARK):
            key, _, value = line[len(MARK):].partition("=")
            out.setdefault(key, value)
    return out


class GoModuleAction(ActionBase):
    """Base of the generated plugins/action/<name>.py: subclasses only set
    gopve_module to the module name the binary dispatches on."""

    gopve_module = None

    def run(self, tmp=None, task_vars=None):
        # ActionBase.__init__ sets both per instance (async off), so class
        # attributes would be overridden: set them here, as action/normal.py
        # does. The binary honours _ansible_check_mode; async goes through
        # Ansible's async_wrapper.
        self._supports_check_mode = True
        self._supports_async = True
        task_vars = task_vars or {}
        result = super(GoModuleAction, self).run(tmp, task_vars)
        del tmp  # unused since Ansible 2.5
        wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
        try:
            if result.get("skipped"):
                return result
            if not self.gopve_module:
                raise AnsibleActionFail("%s sets no gopve_module: the generated action plugin is broken" % type(self).__name__)
            args = self._module_args()
            binary = self._ensure_binary(task_vars, result)
            module_args = {BINARY_KEY: binary, MODULE_KEY: self.gopve_module}
            module_args.update(args)
            result = merge_hash(result, self._execute_module(
                module_name=WRAPPER_MODULE, module_args=module_args,
                task_vars=task_vars, wrap_async=wrap_async))
            return result
        finally:
            # async_wrapper owns (and removes) the tmpdir of an async task.
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)

    def _module_args(self):
        args = dict(self._task.args)
        reserved = sorted(k for k in args if to_text(k).startswith(RESERVED_PREFIX))
        if reserved:
            raise AnsibleActionFail("option names starting with %s are reserved for the collection: remove %s"
                                    % (RESERVED_PREFIX, ", ".join(reserved)))
        return args

    # --- binary selection and the host-side cache -------------------------

    def _target_name(self, task_vars):
        return self._task.delegate_to or task_vars.get("inventory_hostname", "the target")

    def _target_var(self, task_vars, name, default):
        """A host variable of the host the task runs on: the delegated host's
        when delegate_to is set, like the connection variables."""
        if self._task.delegate_to:
            delegated = task_vars.get("ansible_delegated_vars", {}).get(self._task.delegate_to)
            if delegated is not None:
                return delegated.get(name, default)
        return task_vars.get(name, default)

    def _bin_dir(self):
        return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bin"))

    def _local_binaries(self):
        """Platform tag -> (path, sha256) for each binary of this build."""
        found = {}
        bin_dir = self._bin_dir()
        memo_dir = local_tmp_dir()
        for tag in SHIPPED_TAGS:
            path = os.path.join(bin_dir, "gopve_" + tag)
            if os.path.isfile(path):
                found[tag] = (path, cached_sha256(path, memo_dir))
        return found

    def _cache_root(self, task_vars):
        root = to_text(self._templar.template(self._target_var(task_vars, CACHE_VAR, DEFAULT_CACHE)))
        if not (root.startswith("/") or root == "~" or root.startswith("~/")):
            raise AnsibleActionFail("%s must be an absolute path or start with ~/, got %r" % (CACHE_VAR, root))
        return root

    def _ensure_binary(self, task_vars, result):
        """Return the path of a verified binary for the target, transferring
        and installing it only when the host's cache lacks it."""
        host = self._target_name(task_vars)
        local = self._local_binaries()
        hashes = dict((tag, sha) for tag, (_, sha) in local.items())
        res = self._low_level_execute_command(probe_script(self._cache_root(task_vars), hashes), sudoable=True)
        probe = parse_probe(res.get("stdout", ""))
        if "uname" not in probe:
            raise AnsibleActionFail("cannot identify the platform of %s: the probe script printed nothing "
                                    "usable (rc=%s, stderr: %s); a POSIX sh and uname are required"
                                    % (host, res.get("rc"), to_text(res.get("stderr", "")).strip()))
        uname = probe["uname"].strip() or "(uname printed nothing)"
        tag = probe.get("tag", "")
        if not tag:
            raise AnsibleActionFail("gopve.proxmox has no binary for %s: its platform is '%s' (uname -sm). "
                                    "The collection ships binaries for %s." % (host, uname, platform_list()))
        if tag not in local:
            raise AnsibleActionFail("this build of gopve.proxmox has no bin/gopve_%s, needed by %s ('%s'); "
                                    "it holds only %s. A development build carries the controller's binary "
                                    "only: run `make dist` (or `make collection`) to build every platform, "
                                    "or install a released collection."
                                    % (tag, host, uname, ", ".join(sorted(local)) or "no binary at all"))
        if probe.get("error"):
            raise AnsibleActionFail("gopve binary cache on %s: %s" % (host, probe["error"]))
        path = probe.get("path", "")
        if not _SAFE_PATH.match(path):
            raise AnsibleActionFail("the gopve cache path on %s, %r, must be absolute and printable ASCII without "
                                    "quotes or backslashes: set %s to such a directory" % (host, path, CACHE_VAR))
        status = probe.get("status")
        if status == "hit":
            return path
        if status not in ("miss", "corrupt"):
            raise AnsibleActionFail("unexpected answer from the cache check on %s (rc=%s): %s %s"
                                    % (host, res.get("rc"), to_text(res.get("stdout", "")).strip(),
                                       to_text(res.get("stderr", "")).strip()))
        if status == "corrupt":
            msg = ("gopve: the cached binary %s on %s did not match its sha256 and was deleted; "
                   "a fresh copy was installed" % (path, host))
            result.setdefault("warnings", []).append(msg)
        self._install(host, local[tag][0], path, hashes[tag])
        return path

    def _install(self, host, local_path, dest, want):
        if self._connection._shell.tmpdir is None:
            self._make_tmp_path()
        tmpdir = self._connection._shell.tmpdir
        src = self._connection._shell.join_path(tmpdir, "gopve-" + want[:16])
        self._transfer_file(local_path, src)
        # The install runs as the become user: let it read the file.
        self._fixup_perms2([tmpdir, src], execute=False)
        res = self._low_level_execute_command(install_script(src, dest, want), sudoable=True)
        out = parse_probe(res.get("stdout", ""))
        if out.get("status") != "installed":
            raise AnsibleActionFail("could not install the gopve binary into the cache on %s: %s"
                                    % (host, out.get("error") or "rc=%s, %s %s" % (
                                        res.get("rc"), to_text(res.get("stdout", "")).strip(),
                                        to_text(res.get("stderr", "")).strip())))
