package apt

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/host"
)

// Client runs APT commands through a Runner. Opts are extra "-o" settings
// added to every apt-get/apt-cache call (used to point APT at a temporary
// state for check-mode simulations).
type Client struct {
	Runner host.Runner
	Opts   []string
}

func (c Client) aptGet(args ...string) host.Command {
	return host.Command{Name: "apt-get", Args: append(append([]string{}, c.Opts...), args...), Env: ProxyEnv(os.Environ())}
}

// UpdateError is an `apt-get update` that could not fetch every index; it
// lists APT's own "E:"/"Err:" lines (e.g. a 401 from the enterprise repository
// on a node without subscription).
type UpdateError struct {
	Lines []string
	Err   error
}

func (e *UpdateError) Error() string {
	return "apt-get update failed: " + strings.Join(e.Lines, "; ")
}

func (e *UpdateError) Unwrap() error { return e.Err }

// Update refreshes the package lists. apt-get exits 100 on most fetch
// failures but only warns on some (an unsigned or unreachable repository can
// end in "W: Failed to fetch"), so the output is read as well: any "E:" or
// "Err:" line or "W: Failed to fetch" is an error. Other "W:" lines are
// returned as warnings.
func (c Client) Update(ctx context.Context) (warnings []string, err error) {
	res, runErr := c.Runner.Run(ctx, c.aptGet("-o", lockWait, "update"))
	var bad []string
	for _, l := range strings.Split(res.Stdout+"\n"+res.Stderr, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "E: "), strings.HasPrefix(l, "Err:"), strings.HasPrefix(l, "W: Failed to fetch"):
			bad = append(bad, l)
		case strings.HasPrefix(l, "W: "):
			warnings = append(warnings, strings.TrimPrefix(l, "W: "))
		}
	}
	if runErr != nil && len(bad) == 0 {
		bad = append(bad, runErr.Error())
	}
	if len(bad) > 0 {
		return warnings, &UpdateError{Lines: bad, Err: runErr}
	}
	return warnings, nil
}

// Pkg is one package an operation installs or upgrades. From is empty for a
// new install.
type Pkg struct {
	Name string `json:"name"`
	From string `json:"from,omitempty"`
	To   string `json:"to"`
}

// Plan is what apt-get -s says an operation would do.
type Plan struct {
	Install  []Pkg    // Inst lines (new and upgraded)
	Remove   []string // Remv lines
	KeptBack []string // "The following packages have been kept back:"
}

// Upgrades returns only the packages that replace an installed version.
func (p Plan) Upgrades() []Pkg {
	var out []Pkg
	for _, x := range p.Install {
		if x.From != "" {
			out = append(out, x)
		}
	}
	return out
}

// Empty reports whether the operation would do nothing.
func (p Plan) Empty() bool { return len(p.Install) == 0 && len(p.Remove) == 0 && len(p.KeptBack) == 0 }

var (
	instLine = regexp.MustCompile(`^Inst (\S+) (?:\[(\S+)\] )?\((\S+)`)
	remvLine = regexp.MustCompile(`^Remv (\S+)`)
)

// ParseSimulation parses `apt-get -s` output.
func ParseSimulation(out string) Plan {
	var p Plan
	inKept := false
	for _, l := range strings.Split(out, "\n") {
		if inKept {
			if strings.HasPrefix(l, " ") {
				p.KeptBack = append(p.KeptBack, strings.Fields(l)...)
				continue
			}
			inKept = false
		}
		switch {
		// apt 3 (Debian 13) says "Not upgrading:" where apt 2 listed
		// "The following packages have been kept back:".
		case strings.HasPrefix(l, "The following packages have been kept back"), strings.TrimSpace(l) == "Not upgrading:":
			inKept = true
		case instLine.MatchString(l):
			m := instLine.FindStringSubmatch(l)
			p.Install = append(p.Install, Pkg{Name: m[1], From: m[2], To: m[3]})
		case remvLine.MatchString(l):
			p.Remove = append(p.Remove, remvLine.FindStringSubmatch(l)[1])
		}
	}
	return p
}

// lockWait makes apt wait for a dpkg/lists lock held by another apt run
// (unattended-upgrades, a user) instead of failing at once.
const lockWait = "DPkg::Lock::Timeout=300"

// nonInteractive keeps existing config files, never prompts, and waits for
// the dpkg lock.
var nonInteractive = []string{"-y", "-q", "-o", lockWait, "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"}

// SimulateDistUpgrade asks what `apt-get dist-upgrade` would do.
func (c Client) SimulateDistUpgrade(ctx context.Context) (Plan, error) {
	res, err := c.Runner.Run(ctx, c.aptGet("-s", "-q", "dist-upgrade"))
	if err != nil {
		return Plan{}, fmt.Errorf("simulate dist-upgrade: %w", err)
	}
	return ParseSimulation(res.Stdout), nil
}

// SimulateInstall asks what installing pkgs would do.
func (c Client) SimulateInstall(ctx context.Context, pkgs []string) (Plan, error) {
	res, err := c.Runner.Run(ctx, c.aptGet(append([]string{"-s", "-q", "install"}, pkgs...)...))
	if err != nil {
		return Plan{}, fmt.Errorf("simulate install of %s: %w", strings.Join(pkgs, ", "), err)
	}
	return ParseSimulation(res.Stdout), nil
}

// A dpkg transaction (DistUpgrade, Install) is never interrupted: dpkg
// killed between unpacking and configuring leaves packages half-installed
// (`dpkg --audit` lists them) and the next apt-get refuses to run until
// `dpkg --configure -a`. So these run with a context that the caller's
// deadline does not cancel; they end when apt-get ends. Callers that have a
// deadline check it afterwards (ansible.Uninterruptible does) and fail the
// task then, naming the step.

// DownloadDistUpgrade fetches every package the dist-upgrade needs into
// APT's archive cache (apt-get --download-only), under ctx's deadline: it
// changes nothing installed, so cutting it short is harmless, and the dpkg
// transaction that follows (DistUpgrade) then waits on no mirror.
func (c Client) DownloadDistUpgrade(ctx context.Context) error {
	if _, err := c.Runner.Run(ctx, c.aptGet(append(append([]string{}, nonInteractive...), "--download-only", "dist-upgrade")...)); err != nil {
		return fmt.Errorf("downloading the packages of the dist-upgrade: %w", err)
	}
	return nil
}

// DownloadInstall fetches the packages installing pkgs needs, under ctx's
// deadline (see DownloadDistUpgrade).
func (c Client) DownloadInstall(ctx context.Context, pkgs []string) error {
	args := append(append(append([]string{}, nonInteractive...), "--download-only", "install"), pkgs...)
	if _, err := c.Runner.Run(ctx, c.aptGet(args...)); err != nil {
		return fmt.Errorf("downloading the packages to install %s: %w", strings.Join(pkgs, ", "), err)
	}
	return nil
}

// DistUpgrade upgrades everything, non-interactively, keeping local config
// files. It runs to completion whatever ctx's deadline.
func (c Client) DistUpgrade(ctx context.Context) error {
	if _, err := c.Runner.Run(context.WithoutCancel(ctx), c.aptGet(append(append([]string{}, nonInteractive...), "dist-upgrade")...)); err != nil {
		return fmt.Errorf("dist-upgrade: %w", err)
	}
	return nil
}

// Install installs pkgs, non-interactively. It runs to completion whatever
// ctx's deadline.
func (c Client) Install(ctx context.Context, pkgs []string) error {
	args := append(append(append([]string{}, nonInteractive...), "install"), pkgs...)
	if _, err := c.Runner.Run(context.WithoutCancel(ctx), c.aptGet(args...)); err != nil {
		return fmt.Errorf("install %s: %w", strings.Join(pkgs, ", "), err)
	}
	return nil
}

// ReadOnlyOpts keep APT from writing when it only reads or simulates: run
// as root it saves its binary caches (/var/cache/apt/*.bin) whenever they
// are stale, and `apt-get -s install` still logs its plan to
// /var/log/apt/eipp.log.xz. Check mode passes them on every
// apt-get/apt-cache call outside a Sandbox (whose options include them).
var ReadOnlyOpts = []string{"-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=", "-o", "Dir::Log::Planner=/dev/null"}

// Installed returns the installed version of each package that is installed
// (dpkg state "installed", whether selected for install or held); others
// are absent from the map.
func Installed(ctx context.Context, r host.Runner, pkgs []string) (map[string]string, error) {
	out := map[string]string{}
	if len(pkgs) == 0 {
		return out, nil
	}
	args := append([]string{"-W", "-f", `${Package}\t${db:Status-Abbrev}\t${Version}\n`}, pkgs...)
	res, err := r.Run(ctx, host.Command{Name: "dpkg-query", Args: args})
	// exit 1 only means some names are unknown to dpkg: they are not installed
	if err != nil && res.ExitCode != 1 {
		return nil, fmt.Errorf("read installed versions: %w", err)
	}
	for _, l := range strings.Split(res.Stdout, "\n") {
		f := strings.Split(l, "\t")
		// Status-Abbrev: desired action, then state; "ii" and "hi" (on
		// hold, apt-mark hold) are both installed.
		if len(f) == 3 && len(f[1]) >= 2 && f[1][1] == 'i' {
			name, _, _ := strings.Cut(f[0], ":") // drop :amd64
			out[name] = f[2]
		}
	}
	return out, nil
}

// Policy is `apt-cache policy PKG`: installed and candidate versions
// ("" for "(none)").
type Policy struct {
	Installed string `json:"installed"`
	Candidate string `json:"candidate"`
}

// PolicyOf runs apt-cache policy for one package.
func (c Client) PolicyOf(ctx context.Context, pkg string) (Policy, error) {
	res, err := c.Runner.Run(ctx, host.Command{Name: "apt-cache", Args: append(append([]string{}, c.Opts...), "policy", pkg)})
	if err != nil {
		return Policy{}, fmt.Errorf("apt-cache policy %s: %w", pkg, err)
	}
	return ParsePolicy(res.Stdout), nil
}

// ParsePolicy reads the Installed/Candidate lines of apt-cache policy.
func ParsePolicy(out string) Policy {
	var p Policy
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if v == "(none)" {
			v = ""
		}
		switch k {
		case "Installed":
			if p.Installed == "" {
				p.Installed = v
			}
		case "Candidate":
			if p.Candidate == "" {
				p.Candidate = v
			}
		}
	}
	return p
}

// Sandbox is a throw-away APT state (sources, lists, caches) in a temporary
// directory, so check mode can run `apt-get update` against the sources a real
// run would write and simulate the upgrade that would follow, without
// touching /etc/apt or /var/lib/apt/lists. dpkg's status stays the real one
// (read only), so the simulation starts from what is installed.
type Sandbox struct {
	Dir  string
	Opts []string
}

// NewSandbox writes files (logical path → content: sources.list and
// sources.list.d/* entries) under a new temporary directory and returns the
// "-o" options that point APT at it.
//
// `apt-get update` in the sandbox runs without the node's
// APT::Update::{Pre,Post}-Invoke* hooks (cleared by the sandbox's apt.conf,
// passed with -c): they would refresh state outside the sandbox
// (appstream's catalog, command-not-found, update stamps).
func NewSandbox(files map[string][]byte) (*Sandbox, error) {
	dir, err := os.MkdirTemp("", host.SandboxPrefix)
	if err != nil {
		return nil, fmt.Errorf("create temporary APT state: %w", err)
	}
	s := &Sandbox{Dir: dir}
	for _, d := range []string{"sources.list.d", "lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			s.Close()
			return nil, fmt.Errorf("create temporary APT state: %w", err)
		}
	}
	names := slices.Sorted(maps.Keys(files))
	for _, p := range names {
		dst := filepath.Join(dir, "sources.list")
		if p != SourcesList {
			dst = filepath.Join(dir, "sources.list.d", filepath.Base(p))
		}
		if err := os.WriteFile(dst, files[p], 0o644); err != nil {
			s.Close()
			return nil, fmt.Errorf("create temporary APT state: %w", err)
		}
	}
	conf := filepath.Join(dir, "apt.conf")
	if err := os.WriteFile(conf, []byte(sandboxConf), 0o644); err != nil {
		s.Close()
		return nil, fmt.Errorf("create temporary APT state: %w", err)
	}
	s.Opts = []string{
		"-c", conf,
		"-o", "Dir::Etc::sourcelist=" + filepath.Join(dir, "sources.list"),
		"-o", "Dir::Etc::sourceparts=" + filepath.Join(dir, "sources.list.d"),
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		// the download sandbox user (_apt) cannot enter a 0700 temp dir
		"-o", "APT::Sandbox::User=root",
		// simulations log their plan (eipp.log.xz) outside Dir::Cache
		"-o", "Dir::Log::Planner=/dev/null",
	}
	return s, nil
}

// sandboxConf clears the hooks apt-get update would run on the node.
const sandboxConf = `// gopve check mode: no hooks of the node run for the sandbox's apt-get update
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
`

// Close removes the temporary state.
func (s *Sandbox) Close() error { return os.RemoveAll(s.Dir) }
