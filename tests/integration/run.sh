#!/usr/bin/env bash
# ansible-playbook integration tests of gopve.proxmox, run under two
# controllers: ansible-core 2.14 (this Debian 12 machine) and 2.19 (the cached
# Debian 13 root of hack/debian-root.sh, entered with unshare + chroot).
#
# What it sets up, all under one temporary directory removed on exit:
#   - the collection, assembled from this tree with the test-only binary
#     (-tags gopve_testmodule) and its generated gopve_test plugins, built
#     with ansible-galaxy and installed with each controller's ansible-galaxy;
#   - one target: a real sshd from Debian's openssh-server, running in an
#     overlay of the Debian 13 root (so nothing on this machine is changed:
#     its users and sudoers live in the overlay), listening on five loopback
#     addresses with its own host key; root logs in with a generated key, and
#     one unprivileged user per controller has passwordless sudo. Two of the
#     addresses log in with keys whose environment puts a fake uname first on
#     PATH ("FreeBSD amd64", "Darwin arm64") to test platform selection;
#   - localhost through the local connection (delegate_to).
# Every case checks real effects: files on disk, the cache directories,
# transfers counted in -vvv output, the recap; not only task status.
#
# Usage: tests/integration/run.sh            (both controllers)
#        GOPVE_IT_CONTROLLERS=2.14 tests/integration/run.sh
#        GOPVE_IT_PATHS=fast tests/integration/run.sh   (only the fast path)
# Every case runs on the action plugin's fast path (one remote command per
# task, arguments on stdin) under each controller, and under the newest
# controller on its fallback too (host variable gopve_fast_path: false: the
# gopve_exec wrapper through Ansible's _execute_module; see
# FALLBACK_CONTROLLER), each with its own work directory, users and caches.
# GOPVE_TEST_BINARY=/path/to/gopve uses a prebuilt test binary instead of
# building one; GOPVE_IT_KEEP=1 keeps the temporary directory for debugging;
# GOPVE_IT_CASES selects cases (see CASES below).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$REPO/tests/integration
SELF=$HERE/run.sh

# --- helpers run inside a private mount namespace (re-entered via $0) ------

# __overlay ROOT OVL: mount an overlay of ROOT (never written: changes go to
# OVL/up) at OVL/root with /proc, /dev and /tmp, for a chroot.
mount_overlay() {
  local lower=$1 ovl=$2
  mkdir -p "$ovl/up" "$ovl/work" "$ovl/root"
  mount -t overlay overlay -o "lowerdir=$lower,upperdir=$ovl/up,workdir=$ovl/work" "$ovl/root"
  mount -t proc proc "$ovl/root/proc"
  mount --rbind /dev "$ovl/root/dev"
  mount --rbind /sys "$ovl/root/sys"
  mount --bind /tmp "$ovl/root/tmp"
}

if [ "${1:-}" = __holder ]; then
  # __holder ROOT OVL: mount the controller root once and keep the namespace
  # alive; commands enter it with nsenter (ssh ControlPersist masters started
  # there keep using the same mounts).
  shift; mount_overlay "$1" "$2"
  touch "$2/ready"
  exec sleep infinity
fi
if [ "${1:-}" = __target ]; then
  # __target ROOT OVL SETUP SSHD_CONFIG: prepare the target root, then become its sshd.
  shift; lower=$1 ovl=$2 setup=$3 config=$4
  mount_overlay "$lower" "$ovl"
  chroot "$ovl/root" /bin/sh "$setup"
  exec chroot "$ovl/root" /usr/sbin/sshd -D -e -f "$config"
fi

# --- set-up ---------------------------------------------------------------

CONTROLLERS=${GOPVE_IT_CONTROLLERS:-2.14 2.19}
PATHS=${GOPVE_IT_PATHS:-fast fallback}
# The fallback path runs under the newest controller only (issue 27 §3, CI
# time: it was the longest of the four runs). What it exercises is
# ansible-core's own _execute_module with our gopve_exec wrapper: the
# plugin's fallback branch has no code that depends on the controller's
# version (the fast path's encoder and result parsing do, and run on both),
# and ansible-core 2.14 is frozen in Debian 12 while 2.19's module
# execution is the one that changed (data tagging). Under 2.14 the fallback
# still runs wherever the fast path cannot: su (become_methods) and
# requiretty take it on the fast run too.
FALLBACK_CONTROLLER=${GOPVE_IT_FALLBACK_CONTROLLER:-${CONTROLLERS##* }}
paths_of() {  # paths_of CTL: the paths run under controller CTL
  local p out=
  for p in $PATHS; do
    [ "$p" = fallback ] && [ "$1" != "$FALLBACK_CONTROLLER" ] && continue
    out="$out $p"
  done
  echo "${out# }"
}
T=$(mktemp -d /tmp/gopve-it.XXXXXX)
chmod 0711 "$T"
SSHD_PID='' HOLDER_PID='' CTL_PIDS=
kill_tree() {  # kill_tree PID: PID and its descendants, by id
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
  kill "$1" 2>/dev/null || true
}
cleanup() {
  local rc=$? p sock
  # Controllers still running (interrupted run).
  for p in $CTL_PIDS; do kill_tree "$p"; done
  # ssh ControlPersist masters the controllers left: ask each to exit.
  for sock in "$T"/w*/cp/*; do
    [ -S "$sock" ] && { ssh -o ControlPath="$sock" -O exit gopve-it >/dev/null 2>&1 || true; }
  done
  for p in $SSHD_PID $HOLDER_PID; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [ -n "${GOPVE_IT_KEEP:-}" ]; then
    echo "kept $T" >&2
  else
    rm -rf --one-file-system "$T"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '%s\n' "$*" >&2; }
die() { log "run.sh: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (chroot, mount namespaces, sshd)"
# CI (GOPVE_REQUIRE_LAB set, see .ci/run) runs every case under both controllers.
[ "${GOPVE_REQUIRE_LAB:-0}" = 0 ] || [ -z "${GOPVE_IT_CASES:-}${GOPVE_IT_CONTROLLERS:-}" ] ||
  die "GOPVE_IT_CASES/GOPVE_IT_CONTROLLERS narrow the run; GOPVE_REQUIRE_LAB is set, so every case must run"
for tool in ansible-playbook ansible-galaxy ansible-doc ssh-keygen unshare nsenter chroot sha256sum; do
  command -v "$tool" >/dev/null || die "$tool is missing: run make deps"
done

HOST_TAG=$(uname -s | tr '[:upper:]' '[:lower:]')_$(uname -m)
[ "$HOST_TAG" = linux_x86_64 ] || [ "$HOST_TAG" = linux_aarch64 ] ||
  die "these tests run on Linux x86_64 or aarch64, not $HOST_TAG"

# The test-tagged binary (never in bin/: it must not ship).
if [ -n "${GOPVE_TEST_BINARY:-}" ]; then
  TEST_BIN=$GOPVE_TEST_BINARY
else
  log "building the test binary (make build-test)"
  make -s -C "$REPO" build-test >&2
  TEST_BIN=$REPO/tests/integration/out/bin/gopve_$HOST_TAG
fi
[ -x "$TEST_BIN" ] || die "test binary $TEST_BIN missing"
SHA=$(sha256sum "$TEST_BIN" | cut -d' ' -f1)

TRIXIE=
log "Debian 13 root (hack/debian-root.sh trixie; a few minutes the first time)"
TRIXIE=$("$REPO/hack/debian-root.sh" trixie) || die "cannot build the Debian 13 root (the target and the 2.19 controller)"

# Assemble the collection: this tree's collection files, the test binary and
# the plugins it generates, plus gopve_test in the api action group so that
# module_defaults with group/gopve.proxmox.api can be tested honestly.
SRC=$T/src
mkdir -p "$SRC/bin"
for f in galaxy.yml README.md LICENSE CHANGELOG.md meta plugins roles playbooks; do
  [ -e "$REPO/$f" ] && cp -a "$REPO/$f" "$SRC/"
done
cp "$TEST_BIN" "$SRC/bin/gopve_$HOST_TAG"
"$TEST_BIN" gen-plugins --out "$SRC" >&2 || die "gopve gen-plugins failed"
if [ ! -f "$SRC/plugins/action/gopve_test.py" ] || [ ! -f "$SRC/plugins/modules/gopve_test.py" ]; then
  die "gen-plugins wrote no gopve_test plugins: was the binary built with -tags gopve_testmodule?"
fi
sed -i 's/^  api:$/  api:\n    - gopve_test/' "$SRC/meta/runtime.yml"
grep -q -- '- gopve_test' "$SRC/meta/runtime.yml" || die "could not add gopve_test to the api group"
ansible-galaxy collection build --output-path "$T/dist" "$SRC" >"$T/build.log" 2>&1 ||
  { cat "$T/build.log" >&2; die "ansible-galaxy collection build failed"; }
ARTIFACT=$(ls "$T"/dist/gopve-proxmox-*.tar.gz)

# SSH material.
mkdir -p "$T/ssh" "$T/keys" "$T/fake/freebsd" "$T/fake/darwin" "$T/home"
chmod 0755 "$T/home" "$T/fake" "$T/fake/freebsd" "$T/fake/darwin"
ssh-keygen -q -t ed25519 -N '' -f "$T/ssh/host_ed25519"
for k in test fbsd darwin; do ssh-keygen -q -t ed25519 -N '' -C "gopve-it-$k" -f "$T/keys/$k"; done
printf '#!/bin/sh\necho "FreeBSD amd64"\n' >"$T/fake/freebsd/uname"
printf '#!/bin/sh\necho "Darwin arm64"\n' >"$T/fake/darwin/uname"
chmod 0755 "$T/fake/freebsd/uname" "$T/fake/darwin/uname"
# A loopback /24 picked per run, so parallel runs and the lab (127.77.*) don't meet.
NET=127.88.$(( ($$ % 200) + 20 ))
PORT=2222
declare -A ADDR=([h1]=$NET.1 [h2]=$NET.2 [usr]=$NET.3 [fbsd]=$NET.4 [darwin]=$NET.5 [sec]=$NET.6 [pw]=$NET.7 [tty]=$NET.8)
SYSPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
{
  printf '%s\n' "$(cat "$T/keys/test.pub")"
  echo "environment=\"PATH=$T/fake/freebsd:$SYSPATH\" $(cat "$T/keys/fbsd.pub")"
  echo "environment=\"PATH=$T/fake/darwin:$SYSPATH\" $(cat "$T/keys/darwin.pub")"
} >"$T/ssh/authorized_keys.root"
: >"$T/ssh/known_hosts"
for h in "${!ADDR[@]}"; do
  echo "[${ADDR[$h]}]:$PORT $(cut -d' ' -f1,2 "$T/ssh/host_ed25519.pub")" >>"$T/ssh/known_hosts"
done
{
  echo "Port $PORT"
  for h in "${!ADDR[@]}"; do echo "ListenAddress ${ADDR[$h]}"; done
  cat <<EOF
HostKey $T/ssh/host_ed25519
PidFile none
AuthorizedKeysFile $T/ssh/authorized_keys.%u
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitUserEnvironment yes
Subsystem sftp internal-sftp
MaxStartups 100
MaxSessions 100
LogLevel INFO
EOF
} >"$T/ssh/sshd_config"

# One unprivileged user per controller and path (so each run starts with an
# empty cache in that user's home), created inside the target's overlay,
# plus one user "gopvepw" whose sudo asks for its password, and a root
# password for su (become with a password).
PW_PASS=gopve-pw-$RANDOM$RANDOM ROOT_PASS=gopve-root-$RANDOM$RANDOM
declare -A UNPRIV UNPRIV_UID
setup=$T/ssh/target-setup.sh
{
  echo 'set -e'
  echo "echo '127.0.1.1 $(hostname)' >>/etc/hosts"
  echo 'mkdir -p /run/sshd && chmod 0755 /run/sshd'
  n=0
  for c in $CONTROLLERS; do
    for pth in $(paths_of "$c"); do
      u=gopveit${c//./}${pth:0:1}${pth: -1}; uid=$(( 41000 + ${c//./} * 4 + n )); n=$((n + 1))
      UNPRIV[$c$pth]=$u; UNPRIV_UID[$c$pth]=$uid
      echo "useradd -u $uid -m -d $T/home/$u -s /bin/sh $u"
      echo "usermod -p '*' $u"
      echo "echo '$u ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/$u && chmod 0440 /etc/sudoers.d/$u"
      cp "$T/keys/test.pub" "$T/ssh/authorized_keys.$u"
    done
  done
  echo "useradd -u 42000 -m -d $T/home/gopvepw -s /bin/sh gopvepw"
  echo "echo 'gopvepw:$PW_PASS' | chpasswd && echo 'root:$ROOT_PASS' | chpasswd"
  echo "echo 'gopvepw ALL=(ALL) ALL' >/etc/sudoers.d/gopvepw && chmod 0440 /etc/sudoers.d/gopvepw"
  cp "$T/keys/test.pub" "$T/ssh/authorized_keys.gopvepw"
  # gopvett: passwordless sudo that insists on a terminal (requiretty).
  echo "useradd -u 42001 -m -d $T/home/gopvett -s /bin/sh gopvett"
  echo "usermod -p '*' gopvett"
  printf '%s\n' "echo 'Defaults:gopvett requiretty' >/etc/sudoers.d/gopvett" \
    "echo 'gopvett ALL=(ALL) NOPASSWD: ALL' >>/etc/sudoers.d/gopvett" "chmod 0440 /etc/sudoers.d/gopvett"
  cp "$T/keys/test.pub" "$T/ssh/authorized_keys.gopvett"
} >"$setup"
chmod 0644 "$T"/ssh/authorized_keys.* "$setup"

log "starting sshd on $NET.1-${#ADDR[@]}:$PORT"
unshare --mount --propagation private -- "$SELF" __target "$TRIXIE" "$T/target" "$setup" "$T/ssh/sshd_config" \
  >"$T/sshd.log" 2>&1 &
SSHD_PID=$!
for _ in $(seq 100); do
  [ "$(grep -c "Server listening on $NET" "$T/sshd.log" 2>/dev/null)" = "${#ADDR[@]}" ] && break
  kill -0 "$SSHD_PID" 2>/dev/null || { cat "$T/sshd.log" >&2; die "sshd did not start"; }
  sleep 0.1
done
[ "$(grep -c "Server listening on $NET" "$T/sshd.log")" = "${#ADDR[@]}" ] || { cat "$T/sshd.log" >&2; die "sshd is not listening"; }

# The secret of the no_log case, and an environment that carries it to the
# target as a login variable (a task `environment:` would show it in -vvv's
# EXEC lines, which is Ansible's doing, not ours).
SECRET="gopve-S3cret-$RANDOM$RANDOM$RANDOM"
ssh-keygen -q -t ed25519 -N '' -C gopve-it-secret -f "$T/keys/secret"
echo "environment=\"GOPVE_TEST_SECRET=$SECRET\" $(cat "$T/keys/secret.pub")" >>"$T/ssh/authorized_keys.root"
printf 'the_secret: "%s"\n' "$SECRET" >"$T/secret.yml"
chmod 0600 "$T/secret.yml"

if [[ " $CONTROLLERS " == *" 2.19 "* ]]; then
  unshare --mount --propagation private -- "$SELF" __holder "$TRIXIE" "$T/ctl219" >"$T/holder.log" 2>&1 &
  HOLDER_PID=$!
  for _ in $(seq 100); do [ -e "$T/ctl219/ready" ] && break; sleep 0.1; done
  [ -e "$T/ctl219/ready" ] || { cat "$T/holder.log" >&2; die "cannot mount the 2.19 controller root"; }
fi

# --- running a controller -------------------------------------------------

CTL=  # current controller: 2.14 or 2.19
PTH=  # current path: fast or fallback
W=    # their work directory
COLL= # the controller's installed collections (both paths share them)
ctl() {  # ctl CMD...: run CMD under the current controller, clean environment, cwd $W
  local env=("PATH=$SYSPATH" HOME=/root LANG=C.UTF-8 ANSIBLE_CONFIG="$T/ansible.cfg"
    ANSIBLE_COLLECTIONS_PATH="${CTL_COLLECTIONS:-$COLL}" ANSIBLE_LOCAL_TEMP="$W/localtmp"
    ANSIBLE_SSH_CONTROL_PATH_DIR="$W/cp" ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
    ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_INVENTORY="$W/inventory.yml" ANSIBLE_FORKS=5)
  if [ "$CTL" = 2.14 ]; then
    (cd "$W" && env -i "${env[@]}" "$@")
  else
    # shellcheck disable=SC2016 # $0 and $@ are the inner sh's
    nsenter --mount --target "$HOLDER_PID" -- chroot "$T/ctl219/root" \
      /usr/bin/env -i "${env[@]}" /bin/sh -c 'cd "$0" && exec "$@"' "$W" "$@"
  fi
}
: >"$T/ansible.cfg"

prepare_controller() {
  W=$T/w${CTL//./}-$PTH
  mkdir -p "$W/files" "$W/cache" "$W/logs" "$W/localtmp" "$W/cp" "$W/rtmp" "$W/systmp" "$W/async"
  # Remote tmp and async dirs of this controller only: the other controller
  # runs at the same time on the same target.
  chmod 1777 "$W/files" "$W/rtmp" "$W/systmp" "$W/async"
  chmod 0755 "$W"
  local u=${UNPRIV[$CTL$PTH]} fast=true
  [ "$PTH" = fast ] || fast=false
  cat >"$W/inventory.yml" <<EOF
all:
  vars:
    w: $W
    gopve_fast_path: $fast
    unpriv_user: $u
    unpriv_uid: ${UNPRIV_UID[$CTL$PTH]}
    ansible_python_interpreter: /usr/bin/python3
    ansible_remote_tmp: $W/rtmp
    ansible_system_tmpdirs: [$W/systmp]
    ansible_async_dir: $W/async
  children:
    ssh:
      vars:
        ansible_port: $PORT
        ansible_user: root
        ansible_ssh_private_key_file: $T/keys/test
        ansible_ssh_common_args: -o UserKnownHostsFile=$T/ssh/known_hosts -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes
      hosts:
        h1: {ansible_host: ${ADDR[h1]}, gopve_remote_cache: $W/cache/h1}
        h2: {ansible_host: ${ADDR[h2]}, gopve_remote_cache: $W/cache/h2}
        usr: {ansible_host: ${ADDR[usr]}, ansible_user: $u, ansible_become: true, gopve_remote_cache: $W/cache/usr-root}
        fbsd:
          ansible_host: ${ADDR[fbsd]}
          ansible_ssh_private_key_file: $T/keys/fbsd
          gopve_remote_cache: $W/cache/fbsd
          expect_msg: "no binary for fbsd: its platform is 'FreeBSD amd64' .uname -sm.. The collection ships binaries for linux_x86_64"
        darwin:
          ansible_host: ${ADDR[darwin]}
          ansible_ssh_private_key_file: $T/keys/darwin
          gopve_remote_cache: $W/cache/darwin
          expect_msg: "no bin/gopve_darwin_arm64, needed by darwin .'Darwin arm64'.*make dist"
        sec:
          ansible_host: ${ADDR[sec]}
          ansible_ssh_private_key_file: $T/keys/secret
          gopve_remote_cache: $W/cache/sec
        pw:
          ansible_host: ${ADDR[pw]}
          ansible_user: gopvepw
          pw_pass: "$PW_PASS"
          root_pass: "$ROOT_PASS"
        tty: {ansible_host: ${ADDR[tty]}, ansible_user: gopvett, ansible_become: true, gopve_remote_cache: $W/cache/tty}
    local:
      hosts:
        localhost: {ansible_connection: local, gopve_remote_cache: $W/cache/local}
EOF
  [ -f "$T/c${CTL//./}/installed" ] || { cat "$T/c${CTL//./}/install.log"; return 1; }
}

# install_collection: the artifact, installed once per controller by its own
# ansible-galaxy into $T/cNNN/collections. Both paths' runs use that copy: a
# run only reads it (no_binaries copies it, Python may add __pycache__, which
# it writes atomically), and an install cannot depend on the path.
install_collection() {
  W=$T/c${CTL//./} COLL=$T/c${CTL//./}/collections
  mkdir -p "$W/localtmp" "$W/cp"
  local start=$SECONDS
  if ctl ansible-galaxy collection install -p "$W/collections" "$ARTIFACT" >"$W/install.log" 2>&1; then
    touch "$W/installed"
  fi
  echo "   ansible-galaxy collection install ($((SECONDS - start))s)" >>"$W/install.log"
}

# --- checks ---------------------------------------------------------------

PASSED=0 FAILED=0  # per controller: each runs in its own subshell
REASONS=()
why() { REASONS+=("$*"); }

# pb NAME PLAYBOOK [ARGS...]: ansible-playbook -vvv, output in $W/logs/NAME.log
pb() {
  local name=$1 book=$2; shift 2
  cp "$HERE/playbooks/$book" "$W/$book"
  ctl ansible-playbook -vvv "$@" "$book" >"$W/logs/$name.log" 2>&1
}
# puts NAME HOST: transfers of the gopve binary to HOST in that log
puts() {
  local addr=${ADDR[$2]:-$2}
  grep -c "^<$addr> PUT .*/bin/gopve_$HOST_TAG TO " "$W/logs/$1.log" || true
}
recap() {  # recap NAME HOST -> "ok=.. changed=.. unreachable=.. failed=.."
  grep -E "^$2 +: ok=" "$W/logs/$1.log" | tail -1 | tr -s ' ' | cut -d' ' -f3-6
}
expect_recap() {  # expect_recap NAME HOST CHANGED FAILED
  local r; r=$(recap "$1" "$2")
  [[ ( -z "$3" || "$r" == *"changed=$3 "* ) && "$r" == *"failed=$4" ]] || why "$2 recap in $1: '$r', want changed=$3 failed=$4"
}
expect_content() {  # expect_content FILE TEXT
  if [ ! -f "$1" ]; then why "$1 does not exist"; return; fi
  [ "$(cat "$1")" = "$2" ] || why "$1 holds '$(cat "$1")', want '$2'"
}
expect_cache() {  # expect_cache DIR OWNER_UID: exactly one verified entry
  local dir=$1 owner=$2 entries
  entries=$(cd "$dir" 2>/dev/null && find . -mindepth 1 | sort | tr '\n' ' ')
  [ "$entries" = "./$SHA ./$SHA/gopve " ] || { why "cache $dir holds '$entries', want ./$SHA/gopve only"; return; }
  [ "$(sha256sum <"$dir/$SHA/gopve" | cut -d' ' -f1)" = "$SHA" ] || why "cache entry $dir/$SHA/gopve has the wrong hash"
  [ "$(stat -c '%a %u' "$dir/$SHA/gopve")" = "700 $owner" ] ||
    why "cache entry $dir/$SHA/gopve has mode/owner '$(stat -c '%a %u' "$dir/$SHA/gopve")', want '700 $owner'"
}
remote_tmps() {
  find "$W/rtmp" "$W/systmp" "$W/localtmp" -mindepth 1 -maxdepth 1 -name 'ansible-tmp-*' 2>/dev/null | head -3
}
no_remote_tmp_left() {
  # async_wrapper removes its tmpdir just after writing the result the
  # controller polls: give it a moment.
  local left i
  for i in $(seq 50); do left=$(remote_tmps); [ -z "$left" ] && break; sleep 0.2; done
  [ -z "$left" ] || why "task tmpdirs left behind: $left"
}

run_case() {  # run_case NAME: runs case_NAME, records the verdict
  local name=$1 start=$SECONDS
  REASONS=()
  "case_$name" || why "case_$name stopped early"
  # The case's wall time (not an assertion: timings live in make bench) shows
  # where the suite's minutes go.
  if [ ${#REASONS[@]} -eq 0 ]; then
    PASSED=$((PASSED + 1))
    printf '  PASS  %-22s %4ds\n' "$name" $((SECONDS - start))
  else
    FAILED=$((FAILED + 1))
    printf '  FAIL  %-22s %4ds\n' "$name" $((SECONDS - start))
    printf '        - %s\n' "${REASONS[@]}"
    printf '        (logs: %s/logs)\n' "$W"
  fi
}

# --- the cases --------------------------------------------------------------

case_install() {
  ctl ansible-galaxy collection list -p "$COLL" gopve.proxmox >"$W/logs/list.log" 2>&1 ||
    why "ansible-galaxy collection list failed"
  grep -Eq 'gopve\.proxmox +0\.1\.0' "$W/logs/list.log" || why "installed collection not listed: $(cat "$W/logs/list.log")"
  local b=$COLL/ansible_collections/gopve/proxmox/bin/gopve_$HOST_TAG
  [ -x "$b" ] || why "installed $b is not executable"
  # Not executable, as ansible-test sanity asks of modules: Ansible runs it
  # through its shebang's interpreter (the fallback-path cases).
  [ -f "$COLL/ansible_collections/gopve/proxmox/plugins/modules/gopve_exec.sh" ] ||
    why "installed wrapper gopve_exec.sh is missing"
}

case_action_scripts() {
  # Unit tests of the plugin's host-side scripts under this controller's
  # Python and ansible-core (imports included), against the installed copy.
  rm -rf "$W/unit" && cp -a "$HERE/unit" "$W/unit"
  ctl /usr/bin/env PYTHONPATH="$COLL" /usr/bin/python3 -m unittest discover -s "$W/unit" \
    >"$W/logs/action_scripts.log" 2>&1 || why "unit tests failed: $(grep -E '^(FAIL|ERROR):' "$W/logs/action_scripts.log" | head -3 | tr '\n' ' ')"
  grep -q '^OK' "$W/logs/action_scripts.log" || why "unit tests did not report OK"
  grep -q '^Ran [1-9]' "$W/logs/action_scripts.log" || why "no unit test ran (Python 3.11's unittest says OK for zero tests)"
}

case_many_tasks() {
  pb many_tasks many_tasks.yml || why "playbook failed (see many_tasks.log)"
  local h n i
  for h in h1 h2; do
    n=$(puts many_tasks $h)
    [ "$n" = 1 ] || why "$h: binary transferred $n times over 10 module runs, want exactly 1"
    expect_recap many_tasks $h 1 0
    expect_cache "$W/cache/$h" 0
    for i in 1 2 3 4 5; do expect_content "$W/files/$h-$i" "file $i on $h"; done
  done
  # Our plugin must not lean on anything this ansible-core deprecates.
  grep -q 'DEPRECATION' "$W/logs/many_tasks.log" &&
    why "deprecation warnings: $(grep -A2 'DEPRECATION' "$W/logs/many_tasks.log" | head -3 | tr '\n' ' ')"
  no_remote_tmp_left
}

case_idempotence() {
  pb idempotence many_tasks.yml || why "second run failed"
  local h n
  for h in h1 h2; do
    expect_recap idempotence $h 0 0
    n=$(puts idempotence $h)
    [ "$n" = 0 ] || why "$h: binary transferred $n times although cached"
  done
}

case_check_diff() {
  printf 'before\n' >"$W/files/check-existing"
  pb check_diff check_diff.yml --check --diff || why "check-mode run failed"
  [ ! -e "$W/files/check-new" ] || why "check mode created $W/files/check-new"
  expect_content "$W/files/check-existing" before
  expect_recap check_diff h1 3 0
  grep -qx -- '-before' "$W/logs/check_diff.log" || why "diff lacks the line -before"
  grep -qx -- '+after' "$W/logs/check_diff.log" || why "diff lacks the line +after"
}

case_no_log() {
  pb no_log no_log.yml -e "secret_file=$T/secret.yml" || why "no_log playbook failed"
  expect_recap no_log h1 '' 0
  local hits
  no_remote_tmp_left
  hits=$(grep -rl --binary-files=text -- "$SECRET" "$W" "$T/target/up" "$T/ctl${CTL//./}/up" "$T/home" 2>/dev/null | head -5 || true)
  [ -z "$hits" ] || why "secret found in: $hits"
  grep -q 'censored' "$W/logs/no_log.log" || why "the no_log task result was not censored"
  # -vvv shows the module's invocation (register drops it): the value was masked, not dropped.
  grep -q '"secret": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"' "$W/logs/no_log.log" ||
    why "the module did not report the secret option as masked"
}

case_env_fallback_secret() {
  # The fallback reads the login environment of host sec (its key sets
  # GOPVE_TEST_SECRET); a task `environment:` would show the value in -vvv's
  # EXEC lines, which is Ansible's doing, not ours.
  pb env_fallback env_fallback.yml || why "env-fallback playbook failed"
  expect_recap env_fallback sec 0 0
  grep -q '"secret": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"' "$W/logs/env_fallback.log" ||
    why "the env fallback value did not reach the module (no masked secret in its invocation)"
  local hits
  no_remote_tmp_left
  hits=$(grep -rl --binary-files=text -- "$SECRET" "$W" "$T/target/up" "$T/ctl${CTL//./}/up" "$T/home" 2>/dev/null | head -5 || true)
  [ -z "$hits" ] || why "secret (from the env fallback) found in: $hits"
}

case_become() {
  pb become become.yml || why "become playbook failed"
  local u=${UNPRIV[$CTL$PTH]} uid=${UNPRIV_UID[$CTL$PTH]}
  expect_content "$W/files/by-$u" "written by $u"
  [ "$(stat -c %u "$W/files/by-$u" 2>/dev/null)" = "$uid" ] || why "by-$u is not owned by $u"
  expect_cache "$T/home/$u/.ansible/gopve" "$uid"   # default cache: the become user's home
  expect_content "$W/files/by-root-via-sudo" "written by root"
  [ "$(stat -c %u "$W/files/by-root-via-sudo" 2>/dev/null)" = 0 ] || why "by-root-via-sudo is not owned by root"
  expect_cache "$W/cache/usr-root" 0
  no_remote_tmp_left
}

case_delegate() {
  pb delegate delegate.yml || why "delegate playbook failed"
  expect_content "$W/files/delegated" "delegated from h1"
  expect_cache "$W/cache/local" 0
  local n; n=$(puts delegate localhost)
  [ "$n" = 1 ] || why "binary transferred $n times to localhost, want 1"
  [ "$(puts delegate h1)" = 0 ] || why "binary was sent to h1 for a delegated task"
}

case_defaults_env_async() {
  pb defaults_env_async defaults_env_async.yml || why "module_defaults/environment/async playbook failed"
  expect_content "$W/files/async-poll0" async
  expect_content "$W/files/async-poll1" polled
  no_remote_tmp_left
}

case_platforms() {
  pb platforms platforms.yml || why "platform playbook failed (assertions)"
  local h
  for h in fbsd darwin; do
    [ "$(puts platforms $h)" = 0 ] || why "$h: a binary was transferred to an unsupported platform"
    [ ! -e "$W/files/platform-$h" ] || why "$h: the module ran"
    [ ! -e "$W/cache/$h" ] || why "$h: a cache directory was created"
  done
  grep -q 'Exec format error' "$W/logs/platforms.log" && why "an Exec format error reached the user"
  grep -Eq "An exception occurred|NoneType" "$W/logs/platforms.log" && why "a platform refusal is reported as an exception"
  return 0
}

case_corrupt_cache() {
  local entry=$W/cache/h1/$SHA/gopve
  [ -f "$entry" ] || { why "no cache entry to corrupt (many_tasks must run first)"; return; }
  printf '#!/bin/sh\ntouch %s/pwned\necho "{\\"changed\\": false}"\n' "$W" >"$entry"
  pb corrupt one_task.yml || why "run after corrupting the cache failed"
  [ ! -e "$W/pwned" ] || why "the tampered cache entry was executed"
  expect_cache "$W/cache/h1" 0
  [ "$(puts corrupt h1)" = 1 ] || why "h1: binary transferred $(puts corrupt h1) times after corruption, want 1"
  tr -s ' \n' ' ' <"$W/logs/corrupt.log" | grep -q 'did not match its sha256 and was deleted' ||
    why "no warning about the replaced cache entry"
  # A symlink planted in place of the binary is removed, not followed.
  rm -f "$entry"; ln -s /bin/true "$entry"
  pb corrupt_link one_task.yml || why "run after planting a symlink failed"
  if [ -L "$entry" ] || [ ! -f "$entry" ]; then why "the planted symlink is still there"; fi
  expect_cache "$W/cache/h1" 0
}

case_no_binaries() {
  # Issue 19: a collection installed from a git checkout has no bin/. The
  # task fails with one sentence saying what to run, before any remote
  # command, and without ansible-core's "An exception occurred" preamble.
  # The playbook lives outside $W: Ansible also looks for collections
  # beside the playbook ($COLL holds the complete one).
  local alt=$W/nobin
  rm -rf "$alt" && mkdir -p "$alt/c/ansible_collections/gopve"
  cp -a "$COLL/ansible_collections/gopve/proxmox" "$alt/c/ansible_collections/gopve/"
  rm -rf "$alt/c/ansible_collections/gopve/proxmox/bin"
  cp "$HERE/playbooks/one_task.yml" "$alt/"
  CTL_COLLECTIONS=$alt/c ctl ansible-playbook -vvv "$alt/one_task.yml" >"$W/logs/no_binaries.log" 2>&1 &&
    why "a collection without binaries ran the task"
  # shellcheck disable=SC2016 # the backquotes are the message's own text
  grep -q 'holds no module binaries (its bin/ is empty, as in a git checkout): run `make collection`' \
    "$W/logs/no_binaries.log" || why "no message saying what to run: $(grep -m1 'msg' "$W/logs/no_binaries.log")"
  grep -Eq 'An exception occurred|NoneType' "$W/logs/no_binaries.log" &&
    why "the failure is reported as an exception: $(grep -m1 -E 'An exception occurred|NoneType' "$W/logs/no_binaries.log")"
  grep -Eq "^<${ADDR[h1]}> SSH: EXEC" "$W/logs/no_binaries.log" && why "a remote command ran although nothing could"
  return 0
}

# plan_json NAME EXPR: evaluate a Python expression over $W/NAME.json (as d).
plan_json() {
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$W/$1.json" "$2"
}

case_plan_callback() {
  # Issue 19: gopve.proxmox.plan prints phase x host and writes JSON; check
  # mode's prediction is what the real run then does, verified.
  local run
  for run in check real again; do
    local args=() ; [ $run = check ] && args=(--check)
    rm -f "$W/plan-$run.json"
    cp "$HERE/playbooks/plan.yml" "$W/plan.yml"
    ctl /usr/bin/env ANSIBLE_CALLBACKS_ENABLED=gopve.proxmox.plan GOPVE_PLAN_JSON="$W/plan-$run.json" \
      ansible-playbook "${args[@]}" plan.yml >"$W/logs/plan-$run.log" 2>&1 || why "$run run failed"
    [ -f "$W/plan-$run.json" ] || { why "$run run wrote no plan JSON"; continue; }
    grep -q 'GOPVE PLAN' "$W/logs/plan-$run.log" || why "$run run printed no plan table"
    [ $run != check ] || [ ! -e "$W/files/plan-h1" ] || why "the check run wrote a file"
  done
  [ "$(plan_json plan-check "d['mode'], d['phases']['gopve_test']['h1']['changes'], d['phases']['gopve_test']['h2']['changes']")" = "('check', 1, 1)" ] ||
    why "check plan: $(plan_json plan-check "d['mode'], d['phases']")"
  [ "$(plan_json plan-real "d['mode'], d['verified'], d['phases']['gopve_test']['h1']['changes'], d['phases']['gopve_test']['h2']['changes']")" = "('run', True, 1, 1)" ] ||
    why "real plan: $(plan_json plan-real "d['mode'], d['verified'], d['phases']")"
  expect_content "$W/files/plan-h1" planned
  [ "$(plan_json plan-again "d['total']['changes'], d['verified']")" = "(0, True)" ] ||
    why "second run plan: $(plan_json plan-again "d['total'], d['phases']")"
  grep -Eq '^gopve_test +ok +ok$' "$W/logs/plan-again.log" || why "second run table lacks 'gopve_test ok ok'"
}

case_bad_input() {
  pb bad_input bad_input.yml || why "bad-input playbook failed (assertions)"
  [ ! -e "$W/files/bad-input" ] || why "a rejected task created its file"
  expect_recap bad_input h1 0 0
}

case_ansible_doc() {
  ctl ansible-doc gopve.proxmox.gopve_test >"$W/logs/doc.log" 2>&1 || why "ansible-doc gopve.proxmox.gopve_test failed"
  grep -qi 'gopve_test' "$W/logs/doc.log" || why "ansible-doc shows no gopve_test docs"
  ctl ansible-doc gopve.proxmox.gopve_exec >"$W/logs/doc-exec.log" 2>&1 || why "ansible-doc gopve.proxmox.gopve_exec failed"
  tr -s ' \n' ' ' <"$W/logs/doc-exec.log" | grep -q 'not a module to call' ||
    why "the wrapper's docs do not say it is internal: $(head -3 "$W/logs/doc-exec.log")"
  ctl ansible-doc -t callback gopve.proxmox.plan >"$W/logs/doc-plan.log" 2>&1 || why "ansible-doc -t callback gopve.proxmox.plan failed"
  tr -s ' \n' ' ' <"$W/logs/doc-plan.log" | grep -q 'a row per phase and a column per host' || why "ansible-doc shows no docs for the plan callback"
  # The API modules document their connection options once, in the doc
  # fragment plugins/doc_fragments/api.py (issue 27 §3): the installed
  # collection's ansible-doc must still show them, merged with the module's own.
  ctl ansible-doc --json gopve.proxmox.pve_clone >"$W/logs/doc-clone.json" 2>"$W/logs/doc-clone.err" ||
    why "ansible-doc gopve.proxmox.pve_clone failed: $(head -3 "$W/logs/doc-clone.err")"
  local missing
  missing=$(/usr/bin/python3 - "$W/logs/doc-clone.json" <<'PY'
import json
import sys
opts = json.load(open(sys.argv[1]))['gopve.proxmox.pve_clone']['doc'].get('options', {})
want = ('api_host api_port api_user api_password api_token_id api_token_secret validate_certs ca_path '
        'api_fingerprint api_timeout vmid name template timeout created_earlier').split()
print(' '.join(o for o in want if not (opts.get(o) or {}).get('description')))
PY
  ) || why "cannot read ansible-doc --json gopve.proxmox.pve_clone"
  [ -z "$missing" ] || why "ansible-doc gopve.proxmox.pve_clone does not show options: $missing"
  ctl ansible-doc -l gopve.proxmox >"$W/logs/doc-list.log" 2>&1 || why "ansible-doc -l failed"
  grep -q '^gopve\.proxmox\.gopve_test ' "$W/logs/doc-list.log" || why "ansible-doc -l does not list gopve_test"
  grep -Eq '^gopve\.proxmox\.gopve_exec +Internal' "$W/logs/doc-list.log" ||
    why "ansible-doc -l does not mark gopve_exec as internal"
  grep -Eqi 'UNDOCUMENTED|WARNING|ERROR' "$W/logs/doc-list.log" && why "ansible-doc -l complains: $(grep -Ei 'UNDOCUMENTED|WARNING|ERROR' "$W/logs/doc-list.log" | head -3)"
  return 0
}

# exec_counts NAME HOST: "task=count ..." for every TASK of that log, the
# remote commands (SSH: EXEC lines, sftp transfers included; EXEC lines for
# the local connection) run for HOST by that task, in order.
exec_counts() {
  local addr=${ADDR[$2]:-$2}
  awk -v a="<$addr>" '
    /^TASK \[/ { if (t != "") printf "%d ", n; t = $0; n = 0; next }
    /^PLAY RECAP/ { if (t != "") printf "%d ", n; t = ""; next }
    index($0, a " SSH: EXEC ") == 1 || index($0, a " EXEC ") == 1 { n++ }
  ' "$W/logs/$1.log"
}

case_round_trips() {
  # Issue 8: on the fast path every module task after a host's first is one
  # remote command (no tmp dir, no transfer); the fallback needs several.
  # round_trips.yml: one task that probes (fresh cache), then 5 module
  # tasks, on h1 (root login) and usr (sudo without password), pipelining
  # off (Ansible's default); round_trips_pipelining: the same with it on.
  local run h counts c i
  for run in round_trips round_trips_pipelining; do
    local extra=()
    [ $run = round_trips_pipelining ] && extra=(-e ansible_pipelining=true -e rt_cache=pipelining)
    pb $run round_trips.yml "${extra[@]}" || why "$run: playbook failed"
    for h in h1 usr; do
      counts=$(exec_counts $run $h)
      read -r -a c <<<"$counts"
      [ ${#c[@]} = 7 ] || { why "$run $h: want 7 tasks in the log, got '$counts'"; continue; }
      echo "        $run $h: remote commands per task: $counts(task 1 probes and installs)" >>"$W/logs/summary"
      for i in 1 2 3 4 5; do
        if [ "$PTH" = fast ]; then
          [ "${c[$i]}" = 1 ] || why "$run $h task $i: ${c[$i]} remote commands, want 1 on the fast path ($counts)"
        else
          [ "${c[$i]}" -ge 3 ] || why "$run $h task $i: ${c[$i]} remote commands, want the fallback's >= 3 ($counts)"
        fi
      done
    done
    expect_recap $run h1 '' 0
    expect_recap $run usr '' 0
  done
  # Nothing of a task is left in a remote tmp dir, and the arguments never
  # reach the node's disk: the fast path makes no tmp dir at all.
  if [ "$PTH" = fast ]; then
    grep -q "mkdir .*ansible-tmp-.*round" "$W/logs/round_trips.log" && why "a tmp dir was made on the fast path"
    if grep -q "gopve: fallback path" "$W/logs/round_trips.log"; then
      why "a task took the fallback: $(grep -m1 'gopve: fallback path' "$W/logs/round_trips.log")"
    fi
  else
    grep -q "gopve: fallback path (gopve_fast_path is false)" "$W/logs/round_trips.log" || why "the fallback does not say why it was taken"
  fi
  no_remote_tmp_left
}

case_tamper() {
  # Between two tasks of one play (the second on the fast path, the host
  # known): a tampered binary is never run but replaced with a warning; a
  # cache directory made world-writable is refused naming it.
  rm -f "$W/pwned-midplay"
  pb tamper tamper.yml -e "sha=$SHA" || why "tamper playbook failed (assertions)"
  [ ! -e "$W/pwned-midplay" ] || why "the binary tampered with mid-play was executed"
  expect_cache "$W/cache/tamper" 0
}

case_become_methods() {
  # sudo asking for a password (the login user gopvepw), su with the root
  # password, su without one (root to an unprivileged user). sudo runs on
  # the fast path (ssh sends the password, then the arguments, over plain
  # pipes); su needs a terminal, so it always takes the fallback.
  pb become_methods become_methods.yml || why "become_methods playbook failed"
  expect_recap become_methods pw '' 0
  expect_recap become_methods h1 '' 0
  local counts c
  counts=$(exec_counts become_methods pw)
  read -r -a c <<<"$counts"
  echo "        become_methods pw: remote commands per task: $counts" >>"$W/logs/summary"
  # tasks: sudo x2, assert, su x2, assert, then h1's play (0 for pw)
  if [ "$PTH" = fast ]; then
    [ "${c[1]:-}" = 1 ] || why "second sudo-with-password task: ${c[1]:-?} remote commands, want 1 ($counts)"
    grep -q "gopve: fallback path (become method su needs a terminal)" "$W/logs/become_methods.log" ||
      why "su did not say it takes the fallback"
  fi
  # requiretty: the fast path finds out at run time (nothing started), the
  # task and the rest of the play take the fallback.
  expect_recap become_methods tty '' 0
  expect_content "$W/files/by-requiretty" "written by root"
  if [ "$PTH" = fast ]; then
    grep -q "gopve: fallback path (the fast path did not start (rc=1): sudo: .*tty" "$W/logs/become_methods.log" ||
      why "requiretty: the second task did not take the fallback for the remembered reason"
  fi
  expect_content "$W/files/by-su-nopass" "written by ${UNPRIV[$CTL$PTH]}"
  expect_content "$W/files/by-su-pass" "written by root"
  expect_content "$W/files/by-sudo-pass" "written by root"
  grep -rqs -- "$PW_PASS\|$ROOT_PASS" "$W/logs/become_methods.log" "$T/target/up/tmp" && why "a become password shows in the log or on the node"
  no_remote_tmp_left
}

# GOPVE_IT_CASES="install many_tasks corrupt_cache" runs a subset (in this order).
CASES=${GOPVE_IT_CASES:-install action_scripts many_tasks idempotence check_diff no_log env_fallback_secret become become_methods tamper delegate defaults_env_async platforms no_binaries corrupt_cache bad_input plan_callback round_trips ansible_doc}

# Cases whose outcome cannot depend on the path run on the first path of
# $PATHS only (fast, unless GOPVE_IT_PATHS says otherwise), once per
# controller. The path is chosen in GoModuleAction.run
# (plugins/plugin_utils/gopve_action.py): the inventory's gopve_fast_path is
# read by _fast_path_blocker, and it only decides between _run_fast and
# _execute_module(gopve_exec) after _ensure_binary returned a binary. So:
# - install: ansible-galaxy collection list and the installed files; no task
#   runs (and the install itself is shared by both paths);
# - action_scripts: Python unit tests of the plugin's scripts and of
#   _fast_path_blocker itself (fed every gopve_fast_path value), in-process:
#   the inventory is never read;
# - platforms: both refusals are raised in _ensure_binary, from the probe's
#   answer, before either path runs (a refused host leaves no HostMemo
#   entry, so the fast path's later tasks probe again the same way);
# - no_binaries: raised on _local_binaries() being empty, before the
#   blocker is even computed;
# - ansible_doc: ansible-doc reads the installed docs; nothing is executed.
# Every other case runs a module on the target and runs on every path of
# its controller: corrupt_cache too (the fallback's wrapper gopve_exec.sh
# re-checks the hash itself; the fast path relies on fast_script's stamp),
# and bad_input (the Go binary's refusal comes back through each path's
# result parsing).
ONE_PATH_CASES="install action_scripts platforms no_binaries ansible_doc"
FIRST_PATH=${PATHS%% *}

# run_controller: every case under $CTL on path $PTH; prints its report, and
# its counts last as "COUNTS passed failed".
run_controller() {
  local start=$SECONDS c skipped=
  COLL=$T/c${CTL//./}/collections
  echo "== ansible-core $CTL controller, $PTH path"
  if ! prepare_controller; then
    echo "  FAIL  install (see $T/c${CTL//./}/install.log)"
    echo "COUNTS 0 1"
    return
  fi
  ctl ansible --version 2>/dev/null | head -1 | sed 's/^/   /'
  [ "$PTH" = "$FIRST_PATH" ] && tail -1 "$T/c${CTL//./}/install.log"
  for c in $CASES; do
    if [ "$PTH" != "$FIRST_PATH" ] && [[ " $ONE_PATH_CASES " == *" $c "* ]]; then
      skipped="$skipped $c"
      continue
    fi
    run_case "$c"
  done
  [ -z "$skipped" ] || echo "   path-independent, run on the $FIRST_PATH path only:$skipped"
  [ -f "$W/logs/summary" ] && cat "$W/logs/summary"
  echo "== ansible-core $CTL, $PTH path: $PASSED passed, $FAILED failed ($((SECONDS - start))s)"
  echo "COUNTS $PASSED $FAILED"
}

# One install per controller, both at once, before the runs that use them.
pids=()
for CTL in $CONTROLLERS; do install_collection & pids+=($!); CTL_PIDS="$CTL_PIDS $!"; done
for p in "${pids[@]}"; do wait "$p" || true; done
CTL_PIDS=

# The runs share only the sshd and their controller's installed collection
# (each has its own hosts' caches, users and work directory), so they run
# side by side.
pids=()
for CTL in $CONTROLLERS; do
  for PTH in $(paths_of "$CTL"); do
    run_controller >"$T/report.$CTL.$PTH" 2>&1 &
    pids+=($!)
    CTL_PIDS="$CTL_PIDS $!"
  done
done
for p in "${pids[@]}"; do wait "$p" || true; done
CTL_PIDS=
total_passed=0 total_failed=0
for CTL in $CONTROLLERS; do
  for PTH in $(paths_of "$CTL"); do
    grep -v '^COUNTS ' "$T/report.$CTL.$PTH"
    read -r _ p f < <(grep '^COUNTS ' "$T/report.$CTL.$PTH" || echo "COUNTS 0 1")
    total_passed=$((total_passed + p)); total_failed=$((total_failed + f))
  done
done
echo "$total_passed passed, $total_failed failed"
[ "$total_passed" -gt 0 ] || die "no case ran"
[ "$total_failed" = 0 ]
