package apt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/hosttest"
)

const simOut = `NOTE: This is only a simulation!
Reading package lists...
Building dependency tree...
The following packages have been kept back:
  proxmox-kernel-helper
The following packages will be upgraded:
  pve-manager proxmox-widget-toolkit
2 upgraded, 1 newly installed, 0 to remove and 1 not upgraded.
Inst proxmox-widget-toolkit [5.0.2] (5.0.5 Proxmox:9.0/pve-no-subscription [all])
Inst pve-manager [9.2.2] (9.2.5 Proxmox:9.0/pve-no-subscription [amd64]) []
Inst vim (2:9.1.1230-2 Debian:13.1/stable [amd64])
Remv oldpkg [1.0]
Conf proxmox-widget-toolkit (5.0.5 Proxmox:9.0/pve-no-subscription [all])
`

func TestParseSimulation(t *testing.T) {
	p := ParseSimulation(simOut)
	want := []Pkg{{"proxmox-widget-toolkit", "5.0.2", "5.0.5"}, {"pve-manager", "9.2.2", "9.2.5"}, {"vim", "", "2:9.1.1230-2"}}
	if !reflect.DeepEqual(p.Install, want) {
		t.Errorf("Install = %+v", p.Install)
	}
	if len(p.Upgrades()) != 2 || !reflect.DeepEqual(p.Remove, []string{"oldpkg"}) || !reflect.DeepEqual(p.KeptBack, []string{"proxmox-kernel-helper"}) {
		t.Errorf("plan = %+v", p)
	}
	if !ParseSimulation("0 upgraded, 0 newly installed\n").Empty() {
		t.Error("empty simulation not empty")
	}
}

func TestUpdateErrors(t *testing.T) {
	cases := []struct {
		name    string
		reply   hosttest.Reply
		wantErr string
		warns   int
	}{
		{"ok", hosttest.Reply{Stdout: "Hit:1 http://deb.debian.org/debian trixie InRelease\nReading package lists..."}, "", 0},
		{"401 enterprise", hosttest.Reply{Exit: 100, Stdout: "Err:2 https://enterprise.proxmox.com/debian/pve trixie InRelease\n  401  Unauthorized [IP: 1.2.3.4 443]",
			Stderr: "E: Failed to fetch https://enterprise.proxmox.com/debian/pve/dists/trixie/InRelease  401  Unauthorized\nE: The repository 'https://enterprise.proxmox.com/debian/pve trixie InRelease' is not signed."}, "401", 0},
		{"warning-only fetch failure", hosttest.Reply{Stderr: "W: Failed to fetch http://x/dists/y/InRelease  Could not resolve 'x'\nW: Some index files failed to download."}, "Could not resolve", 1},
		{"plain warning", hosttest.Reply{Stderr: "W: Target Packages is configured multiple times"}, "", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := hosttest.New().On("apt-get -o DPkg::Lock::Timeout=300 update", c.reply)
			w, err := Client{Runner: f}.Update(context.Background())
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("err = %v, want containing %q", err, c.wantErr)
			}
			var ue *UpdateError
			if c.wantErr != "" && !errors.As(err, &ue) {
				t.Errorf("error is %T, want *UpdateError", err)
			}
			if len(w) != c.warns {
				t.Errorf("warnings = %q", w)
			}
		})
	}
}

func TestInstalledAndPolicy(t *testing.T) {
	// a held package (apt-mark hold) reads "hi": installed all the same
	f := hosttest.New().On("dpkg-query -W -f * vim htop nope pve-manager tmux", hosttest.Reply{Exit: 1,
		Stdout: "vim\tii \t2:9.1-2\nhtop\tun \t\npve-manager\thi \t9.2.2\ntmux\trc \t3.5\n", Stderr: "dpkg-query: no packages found matching nope"})
	got, err := Installed(context.Background(), f, []string{"vim", "htop", "nope", "pve-manager", "tmux"})
	if err != nil || !reflect.DeepEqual(got, map[string]string{"vim": "2:9.1-2", "pve-manager": "9.2.2"}) {
		t.Errorf("Installed = %v, %v", got, err)
	}
	p := ParsePolicy("pve-manager:\n  Installed: 9.2.2\n  Candidate: 9.2.5\n  Version table:\n")
	if p != (Policy{Installed: "9.2.2", Candidate: "9.2.5"}) {
		t.Errorf("policy = %+v", p)
	}
	if ParsePolicy("x:\n  Installed: (none)\n  Candidate: 1\n").Installed != "" {
		t.Error("(none) not mapped to empty")
	}
}

// ctxRunner records whether each command's context was already done when
// it started.
type ctxRunner struct{ cancelled []bool }

func (r *ctxRunner) Run(ctx context.Context, cmd host.Command) (host.Result, error) {
	r.cancelled = append(r.cancelled, ctx.Err() != nil)
	return host.Result{Command: cmd.String()}, nil
}

// A dpkg transaction is never interrupted by the caller's deadline: dpkg
// killed half-way leaves packages half-configured (`dpkg --audit`).
func TestTransactionsIgnoreTheDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &ctxRunner{}
	c := Client{Runner: r}
	if err := c.DistUpgrade(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Install(ctx, []string{"vim"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.cancelled, []bool{false, false}) {
		t.Errorf("transactions saw a cancelled context: %v", r.cancelled)
	}
	// Issue 15 item 9: the download phase installs nothing and stays under
	// the deadline.
	if err := c.DownloadDistUpgrade(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.DownloadInstall(ctx, []string{"vim"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.cancelled, []bool{false, false, true, true}) {
		t.Errorf("the downloads did not get the caller's (cancelled) context: %v", r.cancelled)
	}
}

// The sandbox's apt-get update runs without the node's update hooks, and
// the read-only runner of check mode accepts it.
func TestSandboxClearsUpdateHooks(t *testing.T) {
	sb, err := NewSandbox(map[string][]byte{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	conf := ""
	for i, o := range sb.Opts {
		if o == "-c" {
			conf = sb.Opts[i+1]
		}
	}
	b, err := os.ReadFile(conf)
	for _, h := range []string{"APT::Update::Post-Invoke;", "APT::Update::Post-Invoke-Success;", "APT::Update::Pre-Invoke;"} {
		if err != nil || !strings.Contains(string(b), "#clear "+h) {
			t.Errorf("sandbox apt.conf %s does not clear %s: %q %v", conf, h, b, err)
		}
	}
	if _, err := exec.LookPath("apt-config"); err == nil {
		// APT itself must read it that way; the node's hooks come from
		// /etc/apt/apt.conf.d, read before any option given
		out, err := exec.Command("apt-config", append([]string{"-o", "APT::Update::Post-Invoke-Success::=touch /tmp/gopve-hook-ran"}, append(sb.Opts, "dump")...)...).Output()
		if err != nil || strings.Contains(string(out), `Post-Invoke-Success:: "touch /tmp/gopve-hook-ran"`) {
			t.Errorf("apt-config with the sandbox options still has the hook: %v\n%s", err, out)
		}
	}
	cmd := Client{Opts: sb.Opts}.aptGet("-o", lockWait, "update")
	if !host.ReadOnlyCommand(cmd) {
		t.Errorf("check mode would refuse the sandbox update %s", cmd)
	}
	if cmd := (Client{Opts: ReadOnlyOpts}).aptGet("-s", "-q", "dist-upgrade"); !host.ReadOnlyCommand(cmd) {
		t.Errorf("check mode would refuse %s", cmd)
	}
}
