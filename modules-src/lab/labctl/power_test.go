package labctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// isTimeout tells a dead host's silence (the SYN is never answered) from
// a refusal (RST: a live host with nothing on the port).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

// assertDead checks what a powered-off machine looks like from the LAN: its
// SSH and API ports never answer (connect times out, no RST), and no
// process of the node is left.
func assertDead(t *testing.T, lab *Lab, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := lab.Run(ctx, name, "true", nil); err == nil || !isTimeout(err) {
		t.Errorf("ssh to powered-off %s: %v, want a connect timeout (a dead host does not refuse)", name, err)
	}
	addr := lab.node(name).info.Addr
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, "8006"), 2*time.Second); err == nil {
		c.Close()
		t.Errorf("the API of powered-off %s accepted a connection", name)
	} else if !isTimeout(err) {
		t.Errorf("the API of powered-off %s: %v, want a connect timeout", name, err)
	}
	if left := processesRootedUnder(lab.node(name).node.UpperPath("/")); len(left) > 0 {
		t.Errorf("processes of powered-off %s still run: %v", name, left)
	}
	if m := MountsUnder(lab.etcPveMount(name)); len(m) > 0 || isMountPoint(lab.etcPveMount(name)) {
		t.Errorf("the /etc/pve mount of powered-off %s is still there", name)
	}
	if on, err := lab.PoweredOn(name); err != nil || on {
		t.Errorf("PoweredOn(%s) = %v, %v after PowerOff", name, on, err)
	}
}

// processesRootedUnder lists the pids whose root directory is under the
// node's directory (its chroot is <node>/root, next to <node>/upper).
func processesRootedUnder(upper string) []string {
	nodeDir := strings.TrimSuffix(strings.TrimSuffix(upper, "/"), "/upper")
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		root, err := os.Readlink("/proc/" + e.Name() + "/root")
		if err == nil && strings.HasPrefix(root+"/", nodeDir+"/") {
			cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			out = append(out, e.Name()+":"+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

func isMountPoint(p string) bool {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == p {
			return true
		}
	}
	return false
}

// clusterStatus is GET /cluster/status on node: quorate and who is online.
func clusterStatus(t *testing.T, lab *Lab, node string) (quorate bool, online map[string]bool) {
	t.Helper()
	var rows []map[string]any
	if err := labAPI(lab, node, "/cluster/status", &rows); err != nil {
		t.Fatalf("/cluster/status on %s: %v", node, err)
	}
	online = map[string]bool{}
	for _, r := range rows {
		switch r["type"] {
		case "cluster":
			quorate = fmt.Sprint(r["quorate"]) == "1"
		case "node":
			online[fmt.Sprint(r["name"])] = fmt.Sprint(r["online"]) == "1"
		}
	}
	return quorate, online
}

// uptime is the node's uptime in seconds as its API reports it.
func uptime(t *testing.T, lab *Lab, node string) int64 {
	t.Helper()
	var st map[string]any
	if err := labAPI(lab, node, "/nodes/"+node+"/status", &st); err != nil {
		t.Fatalf("/nodes/%s/status: %v", node, err)
	}
	f, _ := st["uptime"].(float64)
	return int64(f)
}

// A real power-off (issue 15, C10): the node is gone from the LAN (no SSH,
// no API, no process, no /etc/pve), the other members see it offline and
// stay quorate with 2 of 3 votes; with a second node off the survivor has
// no quorum and its /etc/pve is read-only (C10); power-on brings back SSH,
// the API, the vote and the cluster's current /etc/pve, with what a reboot
// loses lost (running guests stopped unless onboot).
func TestLabPowerOffOnC10(t *testing.T) {
	t.Parallel()
	lab := startLab(t, 9, func(o *Options) {
		o.SimConfig = func(c *pvesim.Config) { c.FenceDelay, c.HADelay = time.Second, 200*time.Millisecond }
	})
	nodes := lab.Nodes()
	ctx := context.Background()
	if _, err := lab.Sim().CreateCluster("pve01", "power", nodes[0].Addr); err != nil {
		t.Fatal(err)
	}
	for _, j := range []int{1, 2} {
		if _, err := lab.Sim().AddNode("pve01", nodes[j].Name, nodes[j].Addr, false); err != nil {
			t.Fatal(err)
		}
	}
	for vmid, onboot := range map[int]string{301: "0", 302: "1", 303: "0"} {
		if err := lab.Sim().AddGuest("pve03", pvesim.GuestSpec{VMID: vmid, Running: true,
			Config: map[string]string{"memory": "512", "onboot": onboot}}); err != nil {
			t.Fatal(err)
		}
	}
	// H3/H7: an HA guest on the node that loses power is recovered elsewhere.
	onNode(t, lab, "pve01", "ha-manager add vm:303 --state started")
	// A daemon of the node and a file in its /run: both die with the power.
	onNode(t, lab, "pve03", "setsid sleep 4711 </dev/null >/dev/null 2>&1 & echo up > /run/gopve-power-marker")

	if err := lab.PowerOff(ctx, "pve03"); err != nil {
		t.Fatal(err)
	}
	t.Run("off_is_gone_from_the_lan", func(t *testing.T) { assertDead(t, lab, "pve03") })

	t.Run("two_of_three_stay_quorate", func(t *testing.T) {
		out := onNode(t, lab, "pve01", "pvecm status")
		for _, want := range []string{"Quorate:          Yes\n", "Nodes:            2\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("pvecm status on pve01 with pve03 off lacks %q:\n%s", want, out)
			}
		}
		quorate, online := clusterStatus(t, lab, "pve02")
		if !quorate || online["pve03"] || !online["pve01"] || !online["pve02"] {
			t.Errorf("/cluster/status on pve02 with pve03 off: quorate %v, online %v", quorate, online)
		}
		// The fencing pvesim's HA does for a node that is down (H3/H7) works
		// with a real power-off: FenceDelay later vm:303 runs on a survivor.
		deadline := time.Now().Add(30 * time.Second)
		where := ""
		for time.Now().Before(deadline) {
			where = onNode(t, lab, "pve01", "ls /etc/pve/nodes/*/qemu-server/303.conf 2>/dev/null || true")
			if where != "" && !strings.Contains(where, "/pve03/") {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if where == "" || strings.Contains(where, "/pve03/") {
			t.Errorf("the HA guest of powered-off pve03 was not recovered on a survivor: %q", where)
		}
		onNode(t, lab, "pve01", "echo '# written while pve03 was off' >> /etc/pve/datacenter.cfg")
	})

	t.Run("idempotent_and_clear_about_unknown_nodes", func(t *testing.T) {
		if err := lab.PowerOff(ctx, "pve03"); err != nil {
			t.Errorf("a second PowerOff: %v", err)
		}
		assertDead(t, lab, "pve03")
		for _, err := range []error{lab.PowerOff(ctx, "pve09"), lab.PowerOn(ctx, "pve09"), lab.Reboot(ctx, "pve09")} {
			if err == nil || !strings.Contains(err.Error(), `no node "pve09"`) || !strings.Contains(err.Error(), "pve01, pve02, pve03") {
				t.Errorf("a power action on an unknown node: %v", err)
			}
		}
		if err := lab.Power(ctx, "pve01", "suspend"); err == nil || !strings.Contains(err.Error(), `unknown power action "suspend"`) {
			t.Errorf("an unknown power action: %v", err)
		}
	})

	t.Run("C10_one_of_three_is_read_only", func(t *testing.T) {
		if err := lab.PowerOff(ctx, "pve02"); err != nil {
			t.Fatal(err)
		}
		assertDead(t, lab, "pve02")
		out := onNode(t, lab, "pve01", "pvecm status")
		if !strings.Contains(out, "Quorate:          No\n") || !strings.Contains(out, "Activity blocked") {
			t.Errorf("pvecm status on the survivor:\n%s", out)
		}
		if quorate, online := clusterStatus(t, lab, "pve01"); quorate || online["pve02"] || online["pve03"] {
			t.Errorf("/cluster/status on the survivor: quorate %v, online %v", quorate, online)
		}
		r := run(t, lab, "pve01", "echo x >> /etc/pve/datacenter.cfg; cat /etc/pve/datacenter.cfg >/dev/null && echo READ-OK")
		if !strings.Contains(r.Stderr, "Permission denied") || !strings.Contains(r.Stdout, "READ-OK") {
			t.Errorf("/etc/pve on a survivor without quorum must be read-only (C10): %+v", r)
		}
	})

	t.Run("power_on_brings_all_back", func(t *testing.T) {
		for _, n := range []string{"pve02", "pve03"} {
			if err := lab.PowerOn(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := lab.PowerOn(ctx, "pve03"); err != nil {
			t.Errorf("PowerOn of a running node: %v", err)
		}
		out := onNode(t, lab, "pve03", "hostname; pvecm status; grep -c 'written while pve03 was off' /etc/pve/datacenter.cfg; "+
			"test -e /run/gopve-power-marker && echo STALE-RUN; pgrep -x sleep -a | grep 4711 || true; qm status 301; qm status 302")
		for _, want := range []string{"pve03\n", "Quorate:          Yes\n", "Nodes:            3\n", "\n1\n",
			"status: stopped\n", "status: running\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("pve03 after power-on lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "STALE-RUN") || strings.Contains(out, "4711") {
			t.Errorf("pve03 kept its /run or a process across the power cycle:\n%s", out)
		}
		if !strings.Contains(out, "status: stopped\nstatus: running\n") {
			t.Errorf("after power-on VM 301 must be stopped and VM 302 (onboot=1) running:\n%s", out)
		}
		var version map[string]any
		if err := labAPI(lab, "pve03", "/version", &version); err != nil || version["version"] == nil {
			t.Errorf("the API of pve03 after power-on: %v %v", version, err)
		}
		if quorate, online := clusterStatus(t, lab, "pve01"); !quorate || !online["pve02"] || !online["pve03"] {
			t.Errorf("/cluster/status after power-on: quorate %v, online %v", quorate, online)
		}
		onNode(t, lab, "pve02", "echo '# quorum is back' >> /etc/pve/datacenter.cfg")
	})

	t.Run("reboot", func(t *testing.T) {
		before := uptime(t, lab, "pve02")
		onNode(t, lab, "pve02", "echo up > /run/gopve-power-marker")
		time.Sleep(2 * time.Second) // without a reboot the uptime is now before+2 or more
		if err := lab.Reboot(ctx, "pve02"); err != nil {
			t.Fatal(err)
		}
		if out := onNode(t, lab, "pve02", "test -e /run/gopve-power-marker && echo STALE-RUN; hostname"); out != "pve02\n" {
			t.Errorf("pve02 after reboot: %q", out)
		}
		if after := uptime(t, lab, "pve02"); after >= before+2 {
			t.Errorf("pve02's uptime went from %d to %d s across the reboot", before, after)
		}
		if quorate, online := clusterStatus(t, lab, "pve02"); !quorate || !online["pve02"] {
			t.Errorf("/cluster/status after reboot: quorate %v, online %v", quorate, online)
		}
	})
}
