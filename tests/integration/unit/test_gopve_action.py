# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host-side scripts of plugins/plugin_utils/gopve_action.py, run with a
real /bin/sh and a fake uname: platform mapping for every shipped platform
(including the macOS ones no test host can run), and the cache decisions
hit / miss / corrupt / install.

run.sh runs this under each controller's Python and ansible-core, with the
installed collection on PYTHONPATH:
  python3 -m unittest discover -s tests/integration/unit
"""

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import types
import unittest

from ansible_collections.gopve.proxmox.plugins.plugin_utils import gopve_action as ga


def sha(data):
    return hashlib.sha256(data).hexdigest()


class ScriptTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gopve-action-test.")
        self.addCleanup(shutil.rmtree, self.dir)
        self.fakebin = os.path.join(self.dir, "fakebin")
        os.mkdir(self.fakebin)
        self.home = os.path.join(self.dir, "home")
        os.mkdir(self.home)
        self.uname("Linux x86_64")

    def uname(self, answer):
        path = os.path.join(self.fakebin, "uname")
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho '%s'\n" % answer)
        os.chmod(path, 0o755)

    def sh(self, script):
        # Ansible appends " && sleep 0" to every command: do the same, so a
        # script that ends badly (e.g. a trailing newline) fails here too.
        env = {"PATH": self.fakebin + ":/usr/bin:/bin", "HOME": self.home}
        res = subprocess.run(["/bin/sh", "-c", script + " && sleep 0"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        self.assertEqual(res.stderr, b"", "script wrote to stderr: %r" % res.stderr)
        return ga.parse_probe(res.stdout)


class CacheScriptTest(ScriptTest):
    def entry(self, content, mode=0o700):
        want = sha(b"the real binary")
        d = os.path.join(self.dir, "cache", want)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "gopve")
        with open(path, "wb") as f:
            f.write(content)
        os.chmod(path, mode)
        return want, path

    def probe(self, want):
        return self.sh(ga.probe_script(self.dir + "/cache", {"linux_x86_64": want}))


class ProbeTest(CacheScriptTest):
    def test_platform_mapping(self):
        cases = [
            ("Linux x86_64", "linux_x86_64"),
            ("Linux aarch64", "linux_aarch64"),
            ("Linux arm64", "linux_aarch64"),
            ("Darwin x86_64", "darwin_x86_64"),
            ("Darwin arm64", "darwin_arm64"),
            ("FreeBSD amd64", ""),
            ("Linux armv7l", ""),
            ("Linux i686", ""),
        ]
        hashes = dict((tag, sha(tag.encode())) for tag in ga.SHIPPED_TAGS)
        for answer, tag in cases:
            with self.subTest(uname=answer):
                self.uname(answer)
                out = self.sh(ga.probe_script(self.dir + "/cache", hashes))
                self.assertEqual(out.get("uname"), answer)
                self.assertEqual(out.get("tag"), tag)
                if tag:
                    self.assertEqual(out.get("path"), "%s/cache/%s/gopve" % (self.dir, hashes[tag]))
                    self.assertEqual(out.get("status"), "miss")
                else:
                    self.assertNotIn("status", out)

    def test_shipped_platform_missing_from_build(self):
        out = self.sh(ga.probe_script(self.dir, {"linux_aarch64": "ab" * 32}))
        self.assertEqual(out.get("tag"), "linux_x86_64")
        self.assertNotIn("path", out)
        self.assertNotIn("status", out)

    def test_hit(self):
        want, path = self.entry(b"the real binary")
        self.assertEqual(self.probe(want).get("status"), "hit")
        self.assertTrue(os.path.exists(path))

    def test_corrupt_entries_are_deleted(self):
        for name, content, mode in [("tampered", b"#!/bin/sh\necho pwned\n", 0o700),
                                    ("truncated", b"the real", 0o700),
                                    ("not executable", b"the real binary", 0o600)]:
            with self.subTest(name):
                want, path = self.entry(content, mode)
                self.assertEqual(self.probe(want).get("status"), "corrupt")
                self.assertFalse(os.path.exists(path), "corrupt entry was kept")

    def test_symlink_is_removed_not_followed(self):
        want, path = self.entry(b"x")
        os.remove(path)
        target = os.path.join(self.dir, "elsewhere")
        with open(target, "wb") as f:
            f.write(b"the real binary")
        os.chmod(target, 0o700)
        os.symlink(target, path)
        self.assertEqual(self.probe(want).get("status"), "corrupt")
        self.assertFalse(os.path.lexists(path))
        self.assertTrue(os.path.exists(target), "the symlink target was touched")

    def test_home_expansion(self):
        out = self.sh(ga.probe_script("~/.ansible/gopve", {"linux_x86_64": "cd" * 32}))
        self.assertEqual(out.get("path"), "%s/.ansible/gopve/%s/gopve" % (self.home, "cd" * 32))

    def test_cache_root_is_quoted(self):
        root = self.dir + "/it's $(touch pwned) here"
        out = self.sh(ga.probe_script(root, {"linux_x86_64": "ef" * 32}))
        self.assertEqual(out.get("path"), "%s/%s/gopve" % (root, "ef" * 32))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "pwned")))


class InstallTest(ScriptTest):
    def src(self, data):
        path = os.path.join(self.dir, "transferred")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_install(self):
        data = b"binary bytes"
        dest = os.path.join(self.dir, "cache", sha(data), "gopve")
        out = self.sh(ga.install_script(self.src(data), os.path.join(self.dir, "cache"), dest, sha(data)))
        self.assertEqual(out.get("status"), "installed")
        with open(dest, "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertEqual(os.stat(dest).st_mode & 0o777, 0o700)
        self.assertEqual(os.listdir(os.path.dirname(dest)), ["gopve"], "temporary file left behind")

    def test_hash_mismatch_installs_nothing(self):
        want = sha(b"what the controller sent")
        dest = os.path.join(self.dir, "cache", want, "gopve")
        out = self.sh(ga.install_script(self.src(b"what arrived"), os.path.join(self.dir, "cache"), dest, want))
        self.assertNotEqual(out.get("status"), "installed")
        self.assertIn("expected " + want, out.get("error", ""))
        self.assertEqual(os.listdir(os.path.dirname(dest)), [], "something was left in the cache")

    def test_install_uses_mktemp(self):
        # A predictable name (.gopve.$$) planted as a symlink by someone
        # else must not be written through.
        data = b"binary bytes"
        root = os.path.join(self.dir, "cache")
        dest = os.path.join(root, sha(data), "gopve")
        self.assertIn('mktemp "$dir/.gopve.XXXXXX"', ga.install_script("s", root, dest, sha(data)))
        self.assertNotIn("$$", ga.install_script("s", root, dest, sha(data)))

    def test_install_refuses_unsafe_cache(self):
        data = b"binary bytes"
        root = os.path.join(self.dir, "cache")
        os.makedirs(root)
        os.chmod(root, 0o777)
        dest = os.path.join(root, sha(data), "gopve")
        out = self.sh(ga.install_script(self.src(data), root, dest, sha(data)))
        self.assertNotEqual(out.get("status"), "installed")
        self.assertIn("writable by group or others", out.get("error", ""))
        self.assertFalse(os.path.exists(dest))


class CacheSafetyTest(CacheScriptTest):
    """Issue 7: the cache directory and the binary belong to the user the
    module runs as and are writable by nobody else, else the probe refuses
    naming the path."""

    def test_group_or_world_writable_is_refused(self):
        for what, mode in [("root", 0o777), ("root", 0o775), ("dir", 0o757), ("bin", 0o722)]:
            with self.subTest(what=what, mode=oct(mode)):
                want, path = self.entry(b"the real binary")
                target = {"root": os.path.join(self.dir, "cache"), "dir": os.path.dirname(path), "bin": path}[what]
                os.chmod(target, mode)
                try:
                    out = self.probe(want)
                finally:
                    os.chmod(target, 0o700)
                self.assertNotIn("status", out)
                self.assertIn("refusing the binary cache: %s is writable by group or others" % target, out.get("error", ""))
                self.assertIn("gopve_remote_cache", out.get("error", ""))
                self.assertTrue(os.path.exists(path), "a refused cache must be left as it is")

    @unittest.skipUnless(os.getuid() == 0, "needs root to create a file of another owner")
    def test_other_owner_is_refused(self):
        want, path = self.entry(b"the real binary")
        os.chown(os.path.dirname(path), 65534, 65534)
        out = self.probe(want)
        self.assertIn("does not belong to", out.get("error", ""))
        self.assertNotIn("status", out)

    def probe_at(self, root, want):
        return self.sh(ga.probe_script(root, {"linux_x86_64": want}))

    def test_symlinked_cache_is_checked_where_it_points(self):
        # Issue 15 item 9: a symlinked gopve_remote_cache used to skip the
        # owner/mode refusal; it is resolved, checked and used as the real
        # directory, also when the link is a parent of the cache.
        want, path = self.entry(b"the real binary")
        real = os.path.realpath(os.path.join(self.dir, "cache"))
        os.symlink(os.path.join(self.dir, "cache"), os.path.join(self.dir, "link"))
        os.symlink(self.dir, os.path.join(self.dir, "parent"))
        for root in (os.path.join(self.dir, "link"), os.path.join(self.dir, "parent", "cache")):
            with self.subTest(root=root):
                os.chmod(real, 0o777)
                try:
                    out = self.probe_at(root, want)
                finally:
                    os.chmod(real, 0o700)
                self.assertNotIn("status", out)
                self.assertIn("refusing the binary cache: %s is writable by group or others" % real, out.get("error", ""))
                out = self.probe_at(root, want)
                self.assertEqual(out.get("status"), "hit", out)
                self.assertEqual(out.get("root"), real)
                self.assertEqual(out.get("path"), os.path.join(real, want, "gopve"))

    @unittest.skipUnless(os.getuid() == 0, "needs root to create a file of another owner")
    def test_symlinked_cache_of_another_owner_is_refused(self):
        want, _ = self.entry(b"the real binary")
        real = os.path.join(self.dir, "cache")
        os.symlink(real, os.path.join(self.dir, "link"))
        os.chown(real, 65534, 65534)
        out = self.probe_at(os.path.join(self.dir, "link"), want)
        self.assertIn("does not belong to", out.get("error", ""))
        self.assertNotIn("status", out)

    def test_symlinked_entry_directory_is_refused(self):
        want = sha(b"the real binary")
        elsewhere = os.path.join(self.dir, "elsewhere")
        os.makedirs(os.path.join(self.dir, "cache"))
        os.makedirs(elsewhere, mode=0o777)
        os.chmod(elsewhere, 0o777)
        os.symlink(elsewhere, os.path.join(self.dir, "cache", want))
        out = self.probe(want)
        self.assertNotIn("status", out)
        self.assertIn("is a symbolic link", out.get("error", ""))

    def test_safe_modes_pass(self):
        want, path = self.entry(b"the real binary")
        os.chmod(os.path.join(self.dir, "cache"), 0o755)
        os.chmod(os.path.dirname(path), 0o755)
        os.chmod(path, 0o755)
        self.assertEqual(self.probe(want).get("status"), "hit")


class FastScriptTest(ScriptTest):
    """The one-command task: check, then exec with the arguments on stdin."""

    def binary(self, body=None, mode=0o700):
        # A stand-in binary: prints what it got on stdin and its argv, as one JSON object.
        body = body or ('#!/bin/sh\n'
                        'printf \'{"argv": "%s", "stdin": %s, "env": "%s"}\\n\' "$*" "$(cat)" "$GOPVE_T_ENV"\n')
        data = body.encode()
        want = sha(data)
        d = os.path.join(self.dir, "cache", want)
        os.makedirs(d)
        path = os.path.join(d, "gopve")
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        return path, want

    def fast(self, path, want, stdin=b'{"a": 1}', env="", stamp=""):
        script = ga.fast_script(path, want, env, stamp)
        envv = {"PATH": self.fakebin + ":/usr/bin:/bin", "HOME": self.home}
        res = subprocess.run(["/bin/sh", "-c", script + " && sleep 0"], env=envv, input=stdin,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        return res.stdout.decode(), res.stderr.decode()

    def test_runs_with_stdin(self):
        path, want = self.binary()
        out, err = self.fast(path, want, env="GOPVE_T_ENV='from env'")
        self.assertEqual(err, "")
        lines = out.splitlines()
        self.assertEqual(lines[0], ga.FAST_RUN)
        self.assertEqual(lines[1], '{"argv": "-", "stdin": {"a": 1}, "env": "from env"}')

    def test_stale_entries_never_run(self):
        for name in ("tampered", "symlink", "not executable", "missing", "world-writable dir"):
            with self.subTest(name):
                shutil.rmtree(os.path.join(self.dir, "cache"), ignore_errors=True)
                pwned = os.path.join(self.dir, "pwned")
                path, want = self.binary()
                if name == "tampered":
                    with open(path, "w") as f:
                        f.write("#!/bin/sh\ntouch %s\n" % pwned)
                elif name == "symlink":
                    os.rename(path, path + ".real")
                    os.symlink(path + ".real", path)
                elif name == "not executable":
                    os.chmod(path, 0o600)
                elif name == "missing":
                    os.remove(path)
                else:
                    os.chmod(os.path.dirname(path), 0o777)
                out, _ = self.fast(path, want)
                self.assertNotIn(ga.FAST_RUN, out)
                self.assertIn(ga.MARK + "fast=stale", out)
                self.assertFalse(os.path.exists(pwned))

    def probe_stamp(self, want):
        out = self.sh(ga.probe_script(os.path.join(self.dir, "cache"), {"linux_x86_64": want}))
        self.assertEqual(out.get("status"), "hit")
        self.assertTrue(out.get("stamp"), "the probe printed no stamp: %r" % out)
        return out["stamp"]

    def test_stamp_check_runs(self):
        path, want = self.binary()
        stamp = self.probe_stamp(want)
        out, err = self.fast(path, want, stamp=stamp, env="GOPVE_T_ENV=x")
        self.assertEqual(err, "")
        self.assertEqual(out.splitlines(), [ga.FAST_RUN, '{"argv": "-", "stdin": {"a": 1}, "env": "x"}'])

    def test_stamp_check_sees_every_change(self):
        pwned = os.path.join(self.dir, "pwned")

        def same_size_rewrite(path):
            # Same length, mtime put back: only ctime tells.
            with open(path, "rb") as f:
                data = f.read()
            st = os.stat(path)
            evil = b"#!/bin/sh\ntouch %s\n" % pwned.encode()
            with open(path, "wb") as f:
                f.write(evil + b"#" * (len(data) - len(evil) - 1) + b"\n")
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

        def replaced(path):
            os.rename(path, path + ".old")
            shutil.copy2(path + ".old", path)

        def symlinked(path):
            os.rename(path, path + ".real")
            os.symlink(path + ".real", path)

        changes = {
            "same-size rewrite, mtime restored": same_size_rewrite,
            "replaced by an identical copy": replaced,
            "symlink": symlinked,
            "dir made world-writable": lambda p: os.chmod(os.path.dirname(p), 0o777),
            "cache root made group-writable": lambda p: os.chmod(os.path.join(self.dir, "cache"), 0o770),
            "binary made world-writable": lambda p: os.chmod(p, 0o702),
            "removed": os.remove,
        }
        for name, change in changes.items():
            with self.subTest(name):
                shutil.rmtree(os.path.join(self.dir, "cache"), ignore_errors=True)
                path, want = self.binary()
                os.chmod(os.path.join(self.dir, "cache"), 0o700)
                stamp = self.probe_stamp(want)
                change(path)
                out, _ = self.fast(path, want, stamp=stamp)
                self.assertNotIn(ga.FAST_RUN, out)
                self.assertIn(ga.MARK + "fast=stale", out)
                self.assertFalse(os.path.exists(pwned))

    def test_install_prints_stamp(self):
        data = b"binary bytes"
        root = os.path.join(self.dir, "cache")
        dest = os.path.join(root, sha(data), "gopve")
        src = os.path.join(self.dir, "transferred")
        with open(src, "wb") as f:
            f.write(data)
        out = self.sh(ga.install_script(src, root, dest, sha(data)))
        self.assertEqual(out.get("status"), "installed")
        self.assertEqual(out.get("stamp"), self.probe_stamp(sha(data)))

    def test_arguments_not_in_argv_or_env(self):
        path, want = self.binary()
        script = ga.fast_script(path, want, "")
        self.assertNotIn("s3cret", script)
        out, _ = self.fast(path, want, stdin=b'{"secret": "s3cret"}')
        self.assertIn('"argv": "-"', out)


class HashMemoTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gopve-action-test.")
        self.addCleanup(shutil.rmtree, self.dir)
        self.memo = os.path.join(self.dir, "memo")
        os.mkdir(self.memo)
        self.bin = os.path.join(self.dir, "gopve_linux_x86_64")

    def write(self, data, mtime_ns):
        with open(self.bin, "wb") as f:
            f.write(data)
        os.utime(self.bin, ns=(mtime_ns, mtime_ns))

    def test_memo_is_used_and_invalidated(self):
        self.write(b"version 1", 10**18)
        self.assertEqual(ga.cached_sha256(self.bin, self.memo), sha(b"version 1"))
        memos = os.listdir(self.memo)
        self.assertEqual(len(memos), 1)
        # Same identity: the memo answers (prove it by planting a value).
        with open(os.path.join(self.memo, memos[0]), "w") as f:
            f.write("0" * 64)
        self.assertEqual(ga.cached_sha256(self.bin, self.memo), "0" * 64)
        # A rebuilt binary (new content, new mtime) is hashed again.
        self.write(b"version 2!", 2 * 10**18)
        self.assertEqual(ga.cached_sha256(self.bin, self.memo), sha(b"version 2!"))
        # A damaged memo is ignored.
        for name in os.listdir(self.memo):
            with open(os.path.join(self.memo, name), "w") as f:
                f.write("garbage")
        self.assertEqual(ga.cached_sha256(self.bin, self.memo), sha(b"version 2!"))

    def test_no_memo_dir(self):
        self.write(b"x", 10**18)
        self.assertEqual(ga.cached_sha256(self.bin, None), sha(b"x"))


class PathTest(unittest.TestCase):
    def test_safe_paths(self):
        # The wrapper copies the path out of the JSON args verbatim: only
        # characters JSON leaves alone are allowed.
        cases = [("/root/.ansible/gopve/ab/gopve", True), ("/with space/x", True),
                 ('/quo"te', False), ("/back\\slash", False), ("relative/x", False),
                 ("/caf\u00e9", False), ("/tab\there", False)]
        for path, ok in cases:
            with self.subTest(path=path):
                self.assertEqual(bool(ga._SAFE_PATH.match(path)), ok)


class FastPathRulesTest(unittest.TestCase):
    """When a task may send its arguments on stdin (GoModuleAction._fast_path_blocker),
    checked on stand-in connection and become objects."""

    class Become(object):
        def __init__(self, name, pipelining=True, require_tty=False):
            self.name, self.pipelining, self.require_tty = name, pipelining, require_tty

    def blocker(self, transport="ssh", become=None, password="", pipelining=False, tty=False,
                wrap_async=False, fast_var=True):
        conn = types.SimpleNamespace(transport=transport)
        fake = types.SimpleNamespace(
            _connection=conn,
            _templar=types.SimpleNamespace(template=lambda v: v),
            _target_var=lambda task_vars, name, default: task_vars.get(name, default),
            _ssh_tty_forced=lambda: tty,
            _become_in_effect=lambda: become,
            get_become_option=lambda name: password if name == "become_pass" else None,
            _is_pipelining_enabled=lambda style: pipelining,
        )
        return ga.GoModuleAction._fast_path_blocker(fake, {ga.FAST_VAR: fast_var}, wrap_async)

    def test_fast(self):
        sudo = self.Become("sudo")
        for kw in [dict(), dict(transport="local"), dict(become=sudo), dict(become=sudo, password="pw"),
                   dict(transport="local", become=sudo), dict(transport="local", become=sudo, password="pw", pipelining=True),
                   dict(become=sudo, pipelining=True), dict(fast_var="yes")]:
            with self.subTest(**dict((k, str(v)) for k, v in kw.items())):
                self.assertIsNone(self.blocker(**kw))

    def test_fallback(self):
        sudo = self.Become("sudo")
        cases = [
            (dict(wrap_async=True), "async"),
            (dict(fast_var=False), "gopve_fast_path is false"),
            (dict(fast_var="no"), "gopve_fast_path is false"),
            (dict(transport="paramiko"), "paramiko connection"),
            (dict(transport="community.docker.docker"), "docker connection"),
            (dict(tty=True), "force a terminal"),
            (dict(become=self.Become("su")), "su needs a terminal"),
            (dict(become=self.Become("ansible.builtin.su"), password="pw", pipelining=True), "su needs a terminal"),
            (dict(become=self.Become("machinectl", pipelining=False)), "machinectl needs a terminal"),
            (dict(become=self.Become("x", require_tty=True)), "x needs a terminal"),
            (dict(transport="local", become=sudo, password="pw"), "become password without pipelining"),
        ]
        for kw, why in cases:
            with self.subTest(why=why, **dict((k, str(v)) for k, v in kw.items())):
                self.assertIn(why, self.blocker(**kw) or "(fast path)")


class SshTtyTest(unittest.TestCase):
    def test_words(self):
        cases = [("-tt", True), ("-t", True), ("-At", True), ("-q -o RequestTTY=force", True),
                 ("-oRequestTTY=yes", True), ("-o 'RequestTTY yes'", True), ("-o RequestTTY=no", False),
                 ("-o RequestTTY=auto", False), ("-i /etc/test/key -lroot -F/etc/ssh/cfg", False),
                 ("-o StrictHostKeyChecking=yes -o UserKnownHostsFile=/tmp/t/known", False),
                 ("-C -o ControlMaster=auto -o ControlPersist=60s", False), ("", False)]
        for args, want in cases:
            with self.subTest(args=args):
                self.assertEqual(ga.ssh_words_force_tty(shlex.split(args)), want)


class HostMemoTest(unittest.TestCase):
    def test_roundtrip_and_keys(self):
        d = tempfile.mkdtemp(prefix="gopve-memo-test.")
        self.addCleanup(shutil.rmtree, d)
        a, b = ga.HostMemo(d, "play1/h1"), ga.HostMemo(d, "play2/h1")
        self.assertEqual(a.get(), {})
        a.set({"path": "/x/gopve", "want": "ab"})
        self.assertEqual(a.get(), {"path": "/x/gopve", "want": "ab"})
        self.assertEqual(b.get(), {}, "another play must probe again")
        a.forget()
        self.assertEqual(a.get(), {})
        self.assertEqual(ga.HostMemo(None, "k").get(), {})


if __name__ == "__main__":
    unittest.main()
