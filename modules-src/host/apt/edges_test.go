package apt

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/hosttest"
)

// Proxies given with Ansible's `environment:` reach apt-get (issue 7): the
// runner's clean environment would drop them otherwise.
func TestProxyEnvReachesAptGet(t *testing.T) {
	t.Setenv("http_proxy", "http://user:secret@proxy.example:3128")
	t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
	t.Setenv("no_proxy", "localhost,.lab.internal")
	t.Setenv("HOME", "/root")
	var envs [][]string
	f := hosttest.New().OnFunc("apt-get *", func(c host.Command) hosttest.Reply {
		envs = append(envs, c.Env)
		return hosttest.Reply{}
	})
	c := Client{Runner: f}
	ctx := context.Background()
	if _, err := c.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SimulateDistUpgrade(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.DistUpgrade(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Install(ctx, []string{"vim"}); err != nil {
		t.Fatal(err)
	}
	for i, env := range envs {
		got := map[string]bool{}
		for _, kv := range env {
			got[kv] = true
		}
		for _, want := range []string{"http_proxy=http://user:secret@proxy.example:3128", "HTTPS_PROXY=http://proxy.example:3128", "no_proxy=localhost,.lab.internal"} {
			if !got[want] {
				t.Errorf("call %d (%s): %s missing from %q", i, f.Calls()[i], want, env)
			}
		}
		if got["HOME=/root"] {
			t.Errorf("call %d: non-proxy variable passed on: %q", i, env)
		}
	}
	for _, line := range f.Calls() {
		if strings.Contains(line, "secret") {
			t.Errorf("proxy credentials on a command line: %s", line)
		}
	}
}

// apt 3 (Debian 13) lists kept-back packages under "Not upgrading:".
func TestParseSimulationApt3(t *testing.T) {
	out := "NOTE: This is only a simulation!\nSummary:\nNot upgrading:\n  pve-manager\n\nUpgrading: 1, Installing: 0, Removing: 0, Not Upgrading: 1\nInst proxmox-widget-toolkit [5.0.2] (5.0.5 Proxmox:9.0/pve-no-subscription [all])\n"
	p := ParseSimulation(out)
	if !reflect.DeepEqual(p.KeptBack, []string{"pve-manager"}) || len(p.Install) != 1 {
		t.Errorf("plan = %+v", p)
	}
}

func TestHeld(t *testing.T) {
	f := hosttest.New().On("apt-mark * showhold", hosttest.Reply{Stdout: "pve-manager\nlibfoo:amd64\n"})
	held, err := Held(context.Background(), f)
	if err != nil || !reflect.DeepEqual(held, []string{"pve-manager", "libfoo"}) {
		t.Fatalf("Held = %q, %v", held, err)
	}
	p := Plan{Install: []Pkg{{"pve-manager", "9.2.2", "9.2.5"}, {"vim", "1", "2"}}, KeptBack: []string{"libfoo", "kernel-helper"}}
	rest, dropped := p.WithoutHeld(held)
	if !reflect.DeepEqual(rest.Install, []Pkg{{"vim", "1", "2"}}) || !reflect.DeepEqual(rest.KeptBack, []string{"kernel-helper"}) || !reflect.DeepEqual(dropped, []string{"pve-manager", "libfoo"}) {
		t.Errorf("rest = %+v, dropped = %q", rest, dropped)
	}
}
