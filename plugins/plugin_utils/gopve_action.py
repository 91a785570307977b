# -*- coding: utf-8 -*-
# Copyright: gopve.proxmox developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared action plugin of every gopve.proxmox module.

The modules are one Go multi-call binary per platform, shipped in the
collection's ``bin/`` directory, cached on each host under
``<cache>/<sha256>/gopve`` (``<cache>`` = host variable
``gopve_remote_cache``, default ``~/.ansible/gopve`` of the user the module
runs as: the become user when ``become`` is on).

The first task of a play on a host (per user and cache directory):

1. runs the probe, one small ``sh`` script that reads ``uname -sm``, checks
   that the cache directory and the binary belong to that user and are not
   writable by group or others (else the task fails saying which path), and
   re-hashes the cached binary: a corrupt or tampered entry is deleted, never
   run;
2. transfers the binary only when the cache misses, and installs it
   atomically (``mktemp`` in the cache directory, hash check, ``mv``), so a
   play of many tasks sends it once per host and parallel forks never run a
   half-written file;
3. remembers, in the run's controller-side tmp dir, that this host's cache
   holds the binary: from then on, for the rest of the play, a task is the
   **fast path**, one remote command that re-checks ownership, mode and
   SHA-256 of the cached binary and execs it with the arguments on stdin
   (``gopve -``): no remote tmp dir, no file transfer, the arguments never in
   argv, the environment or a file on the node.

Where stdin cannot carry the arguments (see ``_fast_path_blocker``: async,
``su`` and other become methods that need a terminal, a become password
without pipelining on the local connection, a forced ssh tty, connections
other than ssh/local, host variable ``gopve_fast_path: false``), the task
takes the **fallback**: the tiny ``WANT_JSON`` wrapper module ``gopve_exec``
run by the stock ``_execute_module`` (tmp dir, args file, async_wrapper),
which re-checks the SHA-256 right before ``exec``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import inspect
import json
import os
import re
import shlex

from ansible import constants as C
from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash
from ansible.vars.clean import remove_internal_keys

try:  # ansible-core >= 2.19: module arguments and results go through a serialization profile
    from ansible.module_utils.common.json import Direction, get_module_encoder
except ImportError:  # 2.14 .. 2.18: plain JSON
    Direction = get_module_encoder = None

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
FAST_VAR = "gopve_fast_path"
MARK = "GOPVE_PROBE "
# Binary modules get the "legacy" serialization profile in 2.19 (module_common).
PROFILE = "legacy"

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

# gopve_stamp PATH...: one line of what stat says about each path: device,
# inode, size, mtime and ctime (ns where stat has them), owner, mode. GNU
# stat, else BSD/macOS stat; any failure prints something that matches no
# recorded stamp.
_STAMP_FN = r"""
gopve_stamp() {
  { stat --printf '%d:%i:%s:%.9Y:%.9Z:%u:%a;' -- "$@" || stat -n -f '%d:%i:%z:%Fm:%Fc:%u:%Lp;' -- "$@"; } 2>/dev/null
}
"""

# gopve_unsafe PATH...: prints why the first of these existing paths must not
# be trusted, nothing when they all belong to the user running this script and
# none is writable by group or others. With that, nobody but this user (and
# root) can replace the binary between the hash check and exec. find -H
# looks at what a symlinked cache directory points to; it runs from / since
# GNU find fails where it cannot come back to a cwd the become user may not
# read (the login user's home).
_UNSAFE_FN = r"""
gopve_unsafe() {
  for p; do
    [ -O "$p" ] || { echo "$p does not belong to $(id -un 2>/dev/null || id -u), the user the module runs as"; return 0; }
  done
  w=$(cd / && find -H "$@" -prune \( -perm -020 -o -perm -002 \) -print 2>&1) || { echo "cannot check the mode of $*: $w"; return 0; }
  [ -z "$w" ] || echo "$(echo "$w" | head -n 1) is writable by group or others"
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
    """The one round trip before a host's first task: platform, cache lookup,
    ownership and mode of the cache, hash of the cached binary.

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
%(unsafe)s
%(stamp)s
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
# A symlinked cache directory (or one below a symlink) is checked, and then
# used, where it really is: the owner and mode that matter are those of the
# directory the binary lands in, and later tasks never go through the link.
if [ -d "$cache_root" ]; then
  real=$(cd -P -- "$cache_root" 2>/dev/null && pwd -P) || real=''
  if [ -z "$real" ]; then
    echo "%(mark)serror=refusing the binary cache: cannot resolve $cache_root to a real directory"
    exit 0
  fi
  cache_root=$real
fi
dir=$cache_root/$want
bin=$dir/gopve
echo "%(mark)sroot=$cache_root"
echo "%(mark)spath=$bin"
if ! gopve_sha256 /dev/null >/dev/null; then
  echo "%(mark)serror=no sha256 tool on this host (sha256sum, shasum, sha256 or openssl)"
  exit 0
fi
if [ -L "$dir" ]; then
  echo "%(mark)serror=refusing the binary cache: $dir is a symbolic link (the cache never makes one). Remove it, or point $CACHE_VAR at a directory of that user"
  exit 0
fi
for p in "$cache_root" "$dir" "$bin"; do
  [ -e "$p" ] && [ ! -L "$p" ] || break
  why=$(gopve_unsafe "$p")
  if [ -n "$why" ]; then
    echo "%(mark)serror=refusing the binary cache: $why. Fix its owner and mode (chmod go-w), or point $CACHE_VAR at a directory of that user"
    exit 0
  fi
done
if [ -L "$bin" ] || [ -e "$bin" ]; then
  before=$(gopve_stamp "$cache_root" "$dir" "$bin")
  if [ ! -L "$bin" ] && [ -f "$bin" ] && [ -x "$bin" ] && [ "$(gopve_hash_of "$bin")" = "$want" ]; then
    [ "$before" = "$(gopve_stamp "$cache_root" "$dir" "$bin")" ] && echo "%(mark)sstamp=$before"
    echo "%(mark)sstatus=hit"
  else
    rm -f "$bin"
    echo "%(mark)sstatus=corrupt"
  fi
else
  echo "%(mark)sstatus=miss"
fi
""" % dict(root=shlex.quote(cache_root), sha=_SHA256_FN, unsafe=_UNSAFE_FN, stamp=_STAMP_FN, mark=MARK,
           cases=cases, wants=wants)).replace("$CACHE_VAR", CACHE_VAR).strip()


def install_script(src, root, dest, want):
    """Move a transferred binary into the cache: copy it to a mktemp name in
    the cache directory, check its hash, then rename, so a concurrent reader
    sees the whole file or nothing. Runs as the user the module will run as,
    and refuses a cache directory that user does not own alone."""
    return (r"""
umask 077
%(sha)s
%(unsafe)s
%(stamp)s
src=%(src)s
root=%(root)s
dest=%(dest)s
want=%(want)s
dir=${dest%%/*}
mkdir -p "$dir" || { echo "%(mark)serror=cannot create the cache directory $dir"; exit 0; }
why=$(gopve_unsafe "$root" "$dir")
[ -z "$why" ] || { echo "%(mark)serror=refusing the binary cache: $why"; exit 0; }
tmp=$(mktemp "$dir/.gopve.XXXXXX") || { echo "%(mark)serror=cannot create a temporary file in $dir"; exit 0; }
if ! cp "$src" "$tmp"; then
  rm -f "$tmp"; echo "%(mark)serror=cannot copy the binary into $dir"; exit 0
fi
got=$(gopve_hash_of "$tmp")
if [ "$got" != "$want" ]; then
  rm -f "$tmp"; echo "%(mark)serror=the transferred binary has sha256 $got, expected $want"; exit 0
fi
chmod 0700 "$tmp" && mv -f "$tmp" "$dest" || { rm -f "$tmp"; echo "%(mark)serror=cannot install $dest"; exit 0; }
before=$(gopve_stamp "$root" "$dir" "$dest")
[ "$(gopve_hash_of "$dest")" = "$want" ] && [ "$before" = "$(gopve_stamp "$root" "$dir" "$dest")" ] && echo "%(mark)sstamp=$before"
echo "%(mark)sstatus=installed"
""" % dict(sha=_SHA256_FN, unsafe=_UNSAFE_FN, stamp=_STAMP_FN, src=shlex.quote(src), root=shlex.quote(root),
           dest=shlex.quote(dest), want=shlex.quote(want), mark=MARK)).strip()


FAST_RUN = MARK + "fast=run"


def fast_script(path, want, env_prefix="", stamp=""):
    """The whole of a fast-path task: re-check the cached binary, then exec
    it with the arguments on stdin.

    With stamp (what gopve_stamp printed when the probe or the install had
    just verified owner, mode and SHA-256), the check is one stat call over
    the cache directory, the <sha256> directory and the binary compared with
    it; this is as safe as re-hashing, ~1 ms instead of ~10-20 ms of
    sha256sum over a 4 MB binary (hack/bench.sh):
    - owner and mode of the three are those verified, so nobody but this
      user (and root) can have written them since; a chown/chmod changes
      ctime anyway;
    - any write, truncation, rename or replacement of the binary changes its
      inode or ctime, and no unprivileged process can set ctime back (only
      moving the system clock can), so the bytes are the ones hashed;
    - a symlink swapped in has another inode.
    What a stat cannot see is damage below the file system (bit rot on the
    disk, raw writes by root); the full hash at every play's first task on
    the host catches that. Without a stamp (a stat this script cannot read),
    the check is the probe's: ownership, mode and the full SHA-256.

    Prints FAST_RUN just before exec, so the plugin knows whether the module
    started (then its JSON result follows) or not (then nothing ran and the
    probe path may run instead). env_prefix (Ansible's `environment:` as
    shell assignments) applies to the binary only, not to the check.
    """
    if stamp:
        check = '[ "$(gopve_stamp "$r" "$d" "$b")" = %s ]' % shlex.quote(stamp)
        funcs = _STAMP_FN
    else:
        check = ('[ ! -L "$b" ] && [ -f "$b" ] && [ -x "$b" ] && [ -z "$(gopve_unsafe "$r" "$d" "$b")" ] '
                 '&& [ "$(gopve_hash_of "$b")" = "$w" ]')
        funcs = _SHA256_FN + _UNSAFE_FN
    return (r"""
%(funcs)s
b=%(bin)s
w=%(want)s
d=${b%%/*}
r=${d%%/*}
if %(check)s; then
  echo '%(run)s'
  %(env)s exec "$b" -
fi
echo '%(mark)sfast=stale'
""" % dict(funcs=funcs, check=check, bin=shlex.quote(path), want=shlex.quote(want),
           run=FAST_RUN, mark=MARK, env=env_prefix)).strip()


def parse_probe(stdout):
    """GOPVE_PROBE key=value lines -> dict (first value of each key wins)."""
    out = {}
    for line in to_text(stdout).splitlines():
        if line.startswith(MARK):
            key, _, value = line[len(MARK):].partition("=")
            out.setdefault(key, value)
    return out


# ssh(1) options that take an argument: in a cluster like -i/key or -lroot,
# what follows them is that argument, not more flags.
_SSH_ARG_FLAGS = "BbcDEeFIiJLlmOoPpQRSWw"


def ssh_words_force_tty(words):
    """Whether ssh arguments (split) ask for a tty: -t in a flag cluster, or
    RequestTTY yes/force (what ansible-core >= 2.15 checks itself)."""
    for i, word in enumerate(words):
        if not word.startswith("-") or word.startswith("--"):
            continue
        for j, flag in enumerate(word[1:]):
            if flag == "t":
                return True
            if flag == "o":
                opt = word[j + 2:] or (words[i + 1] if i + 1 < len(words) else "")
                key, _, val = opt.strip().replace(" ", "=", 1).partition("=")
                if key.strip().lower() == "requesttty" and val.strip().lower() in ("yes", "force"):
                    return True
                break
            if flag in _SSH_ARG_FLAGS:
                break
    return False


def merge_result(result, data):
    """The module's result over the plugin's, keeping the warnings of both
    (merge_hash would let the module's list replace the plugin's cache
    warning)."""
    warnings = list(result.get("warnings") or []) + list(data.get("warnings") or [])
    out = merge_hash(result, data)
    if warnings:
        out["warnings"] = warnings
    return out


def encode_module_args(module_args):
    """The arguments as _execute_module writes them for a binary module, as
    bytes (the local connection hands in_data to Popen.communicate)."""
    if get_module_encoder is not None:
        return to_bytes(json.dumps(module_args, cls=get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)))
    return to_bytes(json.dumps(module_args))


# _parse_returned_data takes the serialization profile from 2.19 on.
_PARSE_PARAMS = inspect.signature(ActionBase._parse_returned_data).parameters


def play_id(task):
    """The uuid of the task's play ('' if not found): the memo lives per play."""
    node = task
    for _ in range(100):
        play = getattr(node, "_play", None)
        if play is not None:
            return to_text(getattr(play, "_uuid", ""))
        node = getattr(node, "_parent", None)
        if node is None:
            break
    return ""


class HostMemo(object):
    """What a previous task of this play learnt about a host's cache, kept in
    the run's controller-side tmp dir (ANSIBLE_LOCAL_TEMP: private to the
    user, removed when ansible-playbook exits): each task runs in its own
    forked worker, so memory does not carry over. Holds {"path", "want"}
    once the probe found or installed the binary, or {"fast": "off", "why"}
    when stdin was refused. Nothing secret is stored. Without a tmp dir
    nothing is remembered (every task probes)."""

    def __init__(self, memo_dir, key):
        self.path = None
        if memo_dir:
            self.path = os.path.join(memo_dir, "gopve-host-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32])

    def get(self):
        if not self.path:
            return {}
        try:
            with open(self.path) as f:
                value = json.load(f)
        except (IOError, OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    def set(self, value):
        if not self.path:
            return
        tmp = "%s.%d" % (self.path, os.getpid())
        try:
            with open(tmp, "w") as f:
                json.dump(value, f)
            os.rename(tmp, self.path)
        except (IOError, OSError):
            pass

    def forget(self):
        if self.path:
            try:
                os.remove(self.path)
            except OSError:
                pass


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
            host = self._target_name(task_vars)
            local = self._local_binaries()
            if not local:
                # Before any remote command: nothing could run anyway.
                raise AnsibleActionFail("this copy of gopve.proxmox holds no module binaries (its bin/ is empty, as "
                                        "in a git checkout): run `make collection` and install the artifact it "
                                        "builds, or install a released collection.")
            hashes = dict((tag, sha) for tag, (_, sha) in local.items())
            cache_root = self._cache_root(task_vars)

            blocker = self._fast_path_blocker(task_vars, wrap_async)
            memo = None
            if blocker is None:
                memo = HostMemo(local_tmp_dir(), self._host_key(host, cache_root, hashes))
                known = memo.get()
                if known.get("fast") == "off":
                    blocker = known.get("why", "the fast path failed earlier in this play")
                elif known.get("path"):
                    data = self._run_fast(host, known["path"], known["want"], known.get("stamp", ""),
                                          args, task_vars, memo=memo)
                    if data is not None:
                        return merge_result(result, data)
                    # Nothing ran. Either stdin was refused (now in the memo)
                    # or the cache changed under us: probe again.
                    blocker = memo.get().get("why")
                    if not blocker:
                        memo.forget()
            if blocker:
                display.vvv("gopve: fallback path (%s)" % blocker, host=host)

            binary, want, stamp = self._ensure_binary(host, local, hashes, cache_root, result)
            if blocker is None:
                data = self._run_fast(host, binary, want, stamp, args, task_vars, memo=memo)
                if data is not None:
                    memo.set({"path": binary, "want": want, "stamp": stamp})
                    return merge_result(result, data)
            module_args = {BINARY_KEY: binary, MODULE_KEY: self.gopve_module}
            module_args.update(args)
            return merge_result(result, self._execute_module(
                module_name=WRAPPER_MODULE, module_args=module_args,
                task_vars=task_vars, wrap_async=wrap_async))
        except AnsibleActionFail as e:
            # Our failures are messages for the user, not crashes. ansible-core's
            # AnsibleActionFail records traceback.format_exc() when it is built,
            # outside any except block ("NoneType: None"), and the callback then
            # prints "An exception occurred during task execution" above the
            # message: return the message alone.
            failed = dict(e.result)
            failed.pop("exception", None)
            result.update(failed)
            return result
        finally:
            # async_wrapper owns (and removes) the tmpdir of an async task.
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)

    # --- the fast path: one remote command per task -------------------------

    def _fast_path_blocker(self, task_vars, wrap_async):
        """Why this task cannot send the arguments on stdin, or None.

        The rules follow what ansible-core itself does with stdin (module
        pipelining) in 2.14 and 2.19:
        - async goes through async_wrapper, which reads an args file;
        - only the ssh and local connections are known to pass stdin as is
          (paramiko refuses it, others are untested);
        - su (and any become plugin that says pipelining = False or
          require_tty) reads its password from a terminal, so Ansible never
          pipelines through it;
        - with a become password, the local connection gives the command a
          pty unless pipelining is on (2.14 and 2.19 local.py), and stdin
          data would never reach the module; ssh sends the password and
          then stdin over plain pipes whatever pipelining says;
        - an ssh tty forced in the ssh arguments (-tt, RequestTTY) would
          echo stdin back and mangle it.
        Sudo's requiretty, which ssh cannot see from here, is caught at run
        time: the module never started, so the task falls back (_run_fast).
        """
        if wrap_async:
            return "async task"
        if not boolean(self._templar.template(self._target_var(task_vars, FAST_VAR, True)), strict=False):
            return "%s is false" % FAST_VAR
        transport = to_text(self._connection.transport).rsplit(".", 1)[-1]
        if transport not in ("ssh", "local"):
            return "the %s connection is not known to pass stdin to a command" % transport
        if transport == "ssh" and self._ssh_tty_forced():
            return "the ssh arguments force a terminal, which would echo stdin"
        become = self._become_in_effect()
        if become is not None:
            name = to_text(getattr(become, "name", "")).rsplit(".", 1)[-1]
            if name == "su" or not getattr(become, "pipelining", True) or getattr(become, "require_tty", False):
                return "become method %s needs a terminal" % name
            if (transport != "ssh" and self.get_become_option("become_pass")
                    and not self._is_pipelining_enabled("new")):
                return ("become password without pipelining: the %s connection gives the command a terminal"
                        % transport)
        return None

    def _become_in_effect(self):
        """The become plugin _low_level_execute_command will apply, or None
        (same test as ansible-core's)."""
        become = self._connection.become
        if not become:
            return None
        ruser = self._get_remote_user()
        buser = self.get_become_option("become_user")
        if C.BECOME_ALLOW_SAME_USER or buser != ruser or not any((ruser, buser)):
            return become
        return None

    def _ssh_tty_forced(self):
        check = getattr(self._connection, "_is_tty_requested", None)  # ansible-core >= 2.15
        if check is not None:
            return bool(check())
        words = []
        for opt in ("ssh_args", "ssh_common_args", "ssh_extra_args"):
            words.extend(shlex.split(to_text(self.get_connection_option(opt, "") or "")))
        return ssh_words_force_tty(words)

    def _host_key(self, host, cache_root, hashes):
        """What identifies "this host's cache" for the memo: the play (so each
        play probes once), the host and address, the user the module runs as,
        the cache directory and the binaries this controller holds."""
        become = self._become_in_effect()
        return json.dumps([
            play_id(self._task), to_text(host), to_text(getattr(self._play_context, "remote_addr", "")),
            to_text(self._get_remote_user()),
            to_text(getattr(become, "name", "")) if become else "",
            to_text(self.get_become_option("become_user")) if become else "",
            cache_root, sorted(hashes.items()),
        ])

    def _run_fast(self, host, path, want, stamp, args, task_vars, memo=None):
        """Run the module as one remote command. Returns its result, or None
        when the binary did not start (nothing ran: the caller may take
        another path). With memo, a refusal of stdin (e.g. sudo's
        requiretty) is remembered so later tasks skip straight to the
        fallback."""
        module_args = {MODULE_KEY: self.gopve_module}
        module_args.update(args)
        self._update_module_args("gopve.proxmox." + self.gopve_module, module_args, task_vars)
        cmd = fast_script(path, want, self._compute_environment_string(), stamp)
        res = self._low_level_execute_command(cmd, sudoable=True, in_data=encode_module_args(module_args))
        lines = to_text(res.get("stdout", "")).splitlines(True)
        started = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == FAST_RUN]
        if not started:
            if MARK + "fast=stale" not in res.get("stdout", ""):
                why = "the fast path did not start (rc=%s): %s" % (res.get("rc"), to_text(res.get("stderr", "")).strip())
                display.vvv("gopve: " + why, host=host)
                if memo is not None:
                    memo.set({"fast": "off", "why": why})
            else:
                display.vvv("gopve: cached binary %s changed since the probe" % path, host=host)
            return None
        res["stdout"] = "".join(lines[started[0] + 1:])
        return self._module_result(res)

    def _module_result(self, res):
        """What _execute_module does with a module's output, for the fast path."""
        if "profile" in _PARSE_PARAMS:
            data = self._parse_returned_data(res, PROFILE)
        else:
            data = self._parse_returned_data(res)
        data.pop("_ansible_suppress_tmpdir_delete", None)
        if "results" in data and (not isinstance(data["results"], (list, tuple))):
            data["ansible_module_results"] = data.pop("results")
            display.warning("Found internal 'results' key in module return, renamed to 'ansible_module_results'.")
        remove_internal_keys(data)
        for key in ("stdout", "stderr"):
            if key in data and key + "_lines" not in data:
                data[key + "_lines"] = (data.get(key) or "").splitlines()
        return data

    def _module_args(self):
        args = self._with_module_defaults(dict(self._task.args))
        reserved = sorted(k for k in args if to_text(k).startswith(RESERVED_PREFIX))
        if reserved:
            raise AnsibleActionFail("option names starting with %s are reserved for the collection: remove %s"
                                    % (RESERVED_PREFIX, ", ".join(reserved)))
        return args

    def _with_module_defaults(self, args):
        """The task's options, with module_defaults filling the ones it omits.

        Ansible applies module_defaults before it drops the options a task
        set to `omit`, so an omitted option loses its module_defaults value
        too (ansible-core 2.14 TaskExecutor; 2.19's ChainTemplar keeps this
        "omit obliterates"). The collection's roles pass each option as
        `{{ ... | default(omit) }}`, one by one, which would make
        module_defaults for group/gopve.proxmox.api (the connection the
        README documents) never reach their modules. Like ansible-core's own
        action plugins that run a module after the task's args are final
        (gather_facts, package, service), fill what is absent from the
        defaults that apply to this module; an option the task sets wins.
        """
        fqcn = "gopve.proxmox." + self.gopve_module
        try:  # ansible-core 2.19 and later
            from ansible.executor.module_common import _apply_action_arg_defaults
        except ImportError:
            _apply_action_arg_defaults = None
        if _apply_action_arg_defaults is not None:
            return _apply_action_arg_defaults(fqcn, self._task, args, self._templar)
        from ansible.executor.module_common import get_action_args_with_defaults
        return get_action_args_with_defaults(fqcn, args, self._task.module_defaults, self._templar,
                                             action_groups=self._task._parent._play._action_groups)

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

    def _ensure_binary(self, host, local, hashes, cache_root, result):
        """Return (path, sha256, stamp) of a verified binary for the target,
        transferring and installing it only when the host's cache lacks it
        (stamp: see fast_script; '' when the host's stat is not usable)."""
        res = self._low_level_execute_command(probe_script(cache_root, hashes), sudoable=True)
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
                                    % (tag, host, uname, ", ".join("bin/gopve_" + t for t in sorted(local))))
        if probe.get("error"):
            raise AnsibleActionFail("gopve binary cache on %s: %s" % (host, probe["error"]))
        path = probe.get("path", "")
        if not _SAFE_PATH.match(path):
            raise AnsibleActionFail("the gopve cache path on %s, %r, must be absolute and printable ASCII without "
                                    "quotes or backslashes: set %s to such a directory" % (host, path, CACHE_VAR))
        status = probe.get("status")
        if status == "hit":
            return path, hashes[tag], probe.get("stamp", "")
        if status not in ("miss", "corrupt"):
            raise AnsibleActionFail("unexpected answer from the cache check on %s (rc=%s): %s %s"
                                    % (host, res.get("rc"), to_text(res.get("stdout", "")).strip(),
                                       to_text(res.get("stderr", "")).strip()))
        if status == "corrupt":
            msg = ("gopve: the cached binary %s on %s did not match its sha256 and was deleted; "
                   "a fresh copy was installed" % (path, host))
            result.setdefault("warnings", []).append(msg)
        stamp = self._install(host, local[tag][0], probe.get("root", ""), path, hashes[tag])
        return path, hashes[tag], stamp

    def _install(self, host, local_path, root, dest, want):
        if self._connection._shell.tmpdir is None:
            self._make_tmp_path()
        tmpdir = self._connection._shell.tmpdir
        src = self._connection._shell.join_path(tmpdir, "gopve-" + want[:16])
        self._transfer_file(local_path, src)
        # The install runs as the become user: let it read the file.
        self._fixup_perms2([tmpdir, src], execute=False)
        res = self._low_level_execute_command(install_script(src, root, dest, want), sudoable=True)
        out = parse_probe(res.get("stdout", ""))
        if out.get("status") != "installed":
            raise AnsibleActionFail("could not install the gopve binary into the cache on %s: %s"
                                    % (host, out.get("error") or "rc=%s, %s %s" % (
                                        res.get("rc"), to_text(res.get("stdout", "")).strip(),
                                        to_text(res.get("stderr", "")).strip())))
        return out.get("stamp", "")
