package host

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// ReadOnly wraps a Runner for check mode: only commands on the read-only
// allow-list (ReadOnlyCommand) run; any other command is not run at all and
// panics with a *WriteAttempt, because a module that tries to change the
// node in check mode is a bug, which the runtime reports as such. The
// wrapper keeps the inner runner's log (Logger).
func ReadOnly(inner Runner) Runner {
	if ro, ok := inner.(readOnlyRunner); ok {
		return ro
	}
	return readOnlyRunner{inner: inner}
}

type readOnlyRunner struct{ inner Runner }

func (r readOnlyRunner) Run(ctx context.Context, cmd Command) (Result, error) {
	if !ReadOnlyCommand(cmd) {
		panic(&WriteAttempt{What: "run `" + cmd.String() + "`, which is not a read-only command"})
	}
	return r.inner.Run(ctx, cmd)
}

func (r readOnlyRunner) Log() []Result {
	if l, ok := r.inner.(Logger); ok {
		return l.Log()
	}
	return nil
}

// readOnlyVerbs lists, per program, the subcommands that only read.
var readOnlyVerbs = map[string][]string{
	"systemctl":  {"is-enabled", "is-active", "is-failed", "show", "status", "cat", "list-units", "list-unit-files", "list-timers", "list-dependencies"},
	"zpool":      {"list", "status", "get", "iostat", "version", "history"},
	"zfs":        {"list", "get", "version"},
	"pvecm":      {"status", "nodes"},
	"pvesm":      {"status", "list", "path"},
	"pvesh":      {"get", "ls"},
	"qm":         {"config", "list", "status", "pending", "showcmd"},
	"pct":        {"config", "list", "status", "pending"},
	"pvesr":      {"list", "status"},
	"ha-manager": {"status", "config"},
	"apt-mark":   {"showhold", "showmanual", "showauto", "showinstall", "showremove", "showpurge"},
	"apt-cache":  {"policy", "show", "showpkg", "showsrc", "madison", "depends", "rdepends", "pkgnames", "search", "stats"},
}

// readOnlyPrograms only ever read (or only read with the arguments modules
// give them).
var readOnlyPrograms = []string{
	"dpkg-query", "uname", "pveversion", "hostname", "id", "stat", "cat", "test", "ls", "readlink",
	"getent", "uptime", "cksum", "sha256sum", "nproc", "lsblk", "findmnt", "ssh-keyscan", "true",
	"linux-version", "lsb_release", "systemd-detect-virt", "df", "free", "whoami", "date", "mountpoint",
}

// dpkgWrites are the dpkg actions that change the system.
var dpkgWrites = []string{"-i", "--install", "--unpack", "--configure", "-r", "--remove", "-P", "--purge",
	"--triggers-only", "--set-selections", "--clear-selections", "--update-avail", "--merge-avail",
	"--clear-avail", "--forget-old-unavail", "--add-architecture", "--remove-architecture", "-A", "--record-avail"}

// dpkgReadOnly are the dpkg actions that only read its database.
var dpkgReadOnly = []string{"--audit", "-C", "--print-architecture", "--print-foreign-architectures", "-l", "--list",
	"-L", "--listfiles", "-s", "--status", "-S", "--search", "--compare-versions", "--get-selections", "--verify", "-V"}

// ReadOnlyCommand reports whether cmd is on the allow-list of commands that
// do not change the node, which is all check mode may run. The list is per
// program, by subcommand or by the options that make it read-only:
//
//   - apt-get only simulates (-s) or runs `update` in a Sandbox, and like
//     apt-cache it must not write APT's binary caches nor (apt-get) its
//     planner log (the Sandbox's options or apt.ReadOnlyOpts); apt-mark
//     only shows (show*), with the same cache options;
//   - systemctl is-enabled/is-active/show/status…; zpool and zfs list/get/
//     status, and their dry runs (zpool create/add -n, zfs create/destroy
//     -n); dpkg --audit/-l/-s…; pvesh get; qm/pct config,
//     list, status; blkid -p; wipefs without -a; ssh-keygen -F/-l.
//
// A module that needs another read-only command adds it here, with a case
// in TestReadOnlyRunner.
func ReadOnlyCommand(cmd Command) bool {
	prog := path.Base(cmd.Name)
	args := cmd.Args
	switch prog {
	case "apt-get":
		return aptGetReadOnly(args)
	case "apt-cache", "apt-mark":
		// apt-mark show* opens APT's cache like apt-cache does, and as
		// root rewrites a stale /var/cache/apt/*.bin (found by the truth
		// suite: a check run after a repository drift wrote pkgcache.bin).
		return aptNoCacheWrite(args) && verbIn(aptVerb(args), readOnlyVerbs[prog])
	case "dpkg":
		return slices.ContainsFunc(args, func(a string) bool { return slices.Contains(dpkgReadOnly, a) }) &&
			!slices.ContainsFunc(args, func(a string) bool { return slices.Contains(dpkgWrites, a) })
	case "blkid":
		// -p probes the device directly; without it blkid may update its
		// cache file (/run/blkid/blkid.tab).
		return slices.Contains(args, "-p") || hasPair(args, "-c", "/dev/null")
	case "wipefs":
		// lists signatures unless told to erase them (-a, -o)
		if slices.Contains(args, "-n") || slices.Contains(args, "--no-act") {
			return true
		}
		return !slices.ContainsFunc(args, func(a string) bool {
			if strings.HasPrefix(a, "--") {
				return a == "--all" || strings.HasPrefix(a, "--offset")
			}
			return strings.HasPrefix(a, "-") && strings.ContainsAny(a[1:], "ao")
		})
	case "zpool", "zfs":
		// -n is the dry run of create/add (zpool) and create/destroy (zfs):
		// it validates and prints what would be done, and changes nothing
		if dry := map[string][]string{"zpool": {"create", "add"}, "zfs": {"create", "destroy"}}[prog]; slices.Contains(dry, firstArg(args)) {
			return slices.Contains(args, "-n")
		}
		return verbIn(firstArg(args), readOnlyVerbs[prog])
	case "ssh-keygen":
		return slices.Contains(args, "-F") || slices.Contains(args, "-l") || slices.Contains(args, "-y")
	case "ssh":
		return sshReadOnly(args)
	}
	if slices.Contains(readOnlyPrograms, prog) {
		return true
	}
	if verbs, ok := readOnlyVerbs[prog]; ok {
		return verbIn(firstArg(args), verbs)
	}
	return false
}

// ChangesNode tells whether cmd, run for real, may change the node, for
// the runtime's write count (issue 23 §2: an Apply that ran one cannot end
// "nothing changed"): every command check mode's allow-list refuses
// (ReadOnlyCommand), except apt-get --download-only, which only fills
// APT's archive cache (a cut download changed nothing, docs/contracts.md).
func ChangesNode(cmd Command) bool {
	if ReadOnlyCommand(cmd) {
		return false
	}
	if path.Base(cmd.Name) == "apt-get" && slices.ContainsFunc(cmd.Args, func(a string) bool { return a == "--download-only" || a == "-d" }) {
		return false
	}
	return true
}

// sshSafeOptions are the ssh -o options a read-only ssh may carry: none of
// them runs a local command or writes a file (UpdateHostKeys must be no,
// StrictHostKeyChecking yes, so known_hosts is never written).
var sshSafeOptions = map[string]string{
	"batchmode": "yes", "stricthostkeychecking": "yes", "updatehostkeys": "no",
	"connecttimeout": "", "identityfile": "", "user": "", "port": "", "loglevel": "",
	"userknownhostsfile": "", "globalknownhostsfile": "", "hostkeyalias": "",
	"serveraliveinterval": "", "serveralivecountmax": "", "passwordauthentication": "no",
}

// shellInertWord matches a word the remote shell takes literally: no
// separator, redirection, substitution, quote, glob, tilde or blank.
var shellInertWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// sshReadOnly: `ssh -o K=V… -T HOST -- CMD ARGS…` reads only when its
// options are on sshSafeOptions (with the value required there, if any),
// StrictHostKeyChecking=yes and UpdateHostKeys=no are given, and the remote
// command is itself read-only by these rules. ssh joins the remote words
// with spaces and hands them to the remote user's shell, so a word with
// shell syntax in it (`status; rm -rf /`, `$(touch x)`) would run more than
// the allow-list saw: every remote word must be shell-inert.
func sshReadOnly(args []string) bool {
	strict, noUpdate := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-T" || a == "-n" || a == "-q":
		case a == "-o" && i+1 < len(args):
			k, v, _ := strings.Cut(args[i+1], "=")
			k = strings.ToLower(k)
			want, ok := sshSafeOptions[k]
			if k == "knownhostscommand" && pinnedHostKey(v) {
				ok, want = true, ""
			}
			if !ok || want != "" && !strings.EqualFold(v, want) {
				return false
			}
			strict = strict || k == "stricthostkeychecking"
			noUpdate = noUpdate || k == "updatehostkeys"
			i++
		case strings.HasPrefix(a, "-"):
			return false
		default:
			rest := args[i+1:]
			if len(rest) > 0 && rest[0] == "--" {
				rest = rest[1:]
			}
			if !strict || !noUpdate || len(rest) == 0 {
				return false
			}
			for _, w := range rest {
				if !shellInertWord.MatchString(w) {
					return false
				}
			}
			return ReadOnlyCommand(Command{Name: rest[0], Args: rest[1:]})
		}
	}
	return false
}

// pinnedHostKey: KnownHostsCommand=/bin/echo HOSTS TYPE KEY, a host key
// pinned on the command line. ssh runs the command without a shell
// (argv_split, then execve) after expanding %-tokens, so echo with three
// plain words, no '%', only prints the line: it reads nothing and writes
// nothing.
func pinnedHostKey(v string) bool {
	f := strings.Fields(v)
	return len(f) == 4 && f[0] == "/bin/echo" && !strings.ContainsAny(v, "%'\"\\$`;|&<>")
}

func verbIn(v string, verbs []string) bool { return v != "" && slices.Contains(verbs, v) }

// firstArg is the first argument that is not an option.
func firstArg(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// aptVerb is the first argument of an apt command that is neither an
// option nor an option's value (-o X, -c X, -t X).
func aptVerb(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o" || a == "-c" || a == "-t" || a == "--option" || a == "--config-file" || a == "--target-release":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// aptOpt returns the value of "-o Key=value" (the last one wins, as in APT).
func aptOpt(args []string, key string) (string, bool) {
	val, found := "", false
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "-o" && args[i] != "--option" {
			continue
		}
		k, v, ok := strings.Cut(args[i+1], "=")
		if ok && strings.EqualFold(k, key) {
			val, found = v, true
		}
	}
	return val, found
}

func hasPair(args []string, k, v string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == k && args[i+1] == v {
			return true
		}
	}
	return false
}

// inSandbox tells whether p lies in a Sandbox directory.
func inSandbox(p string) bool {
	prefix := filepath.Join(os.TempDir(), SandboxPrefix)
	return strings.HasPrefix(filepath.Clean(p), prefix)
}

// aptNoCacheWrite: APT run as root saves its binary caches
// (/var/cache/apt/*.bin) whenever they are stale, even to simulate; it may
// only do so in a sandbox, or not at all.
func aptNoCacheWrite(args []string) bool {
	if c, ok := aptOpt(args, "Dir::Cache"); ok && inSandbox(c) {
		return true
	}
	pkg, ok1 := aptOpt(args, "Dir::Cache::pkgcache")
	src, ok2 := aptOpt(args, "Dir::Cache::srcpkgcache")
	return ok1 && ok2 && pkg == "" && src == ""
}

// aptGetNoWrite adds apt-get's planner log (/var/log/apt/eipp.log.xz),
// written even by `apt-get -s install`.
func aptGetNoWrite(args []string) bool {
	planner, ok := aptOpt(args, "Dir::Log::Planner")
	return aptNoCacheWrite(args) && ok && planner == "/dev/null"
}

func aptGetReadOnly(args []string) bool {
	if !aptGetNoWrite(args) {
		return false
	}
	simulate := slices.ContainsFunc(args, func(a string) bool {
		return a == "-s" || a == "--simulate" || a == "--just-print" || a == "--dry-run" || a == "--recon" || a == "--no-act"
	})
	verb := aptVerb(args)
	switch {
	case verb == "update":
		// only into a sandbox, with the node's update hooks cleared
		lists, ok := aptOpt(args, "Dir::State::Lists")
		conf := ""
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-c" || args[i] == "--config-file" {
				conf = args[i+1]
			}
		}
		return ok && inSandbox(lists) && conf != "" && inSandbox(conf)
	case simulate:
		return verb == "install" || verb == "dist-upgrade" || verb == "upgrade" || verb == "full-upgrade" || verb == "remove" || verb == "purge" || verb == "autoremove"
	}
	return false
}

// SandboxPrefix starts the name of every Sandbox directory (in os.TempDir).
const SandboxPrefix = "gopve-apt-"
