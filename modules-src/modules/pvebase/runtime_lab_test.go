package pvebase

// Lab proofs of the runtime contract (issue 7): check mode writes nothing
// anywhere on any node, proven on the whole overlay upper directory; a
// deadline never interrupts a dpkg transaction.

import (
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/aptrepo"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

func TestLabRuntimeContractPVE8(t *testing.T) {
	t.Parallel()
	testLabRuntimeContract(t, 8)
}
func TestLabRuntimeContractPVE9(t *testing.T) {
	t.Parallel()
	testLabRuntimeContract(t, 9)
}

func testLabRuntimeContract(t *testing.T, pve int) {
	lab, _ := labtest.Start(t, pve, 2)
	bin := labtest.NodeBinary

	// Check mode on a fresh node, where every stage has something to do:
	// repositories, the sandbox's apt-get update (the node's
	// APT::Update::Post-Invoke hooks must not run), packages, upgrade, ARC,
	// the notice and its hook. Nothing may change anywhere on any node.
	base := map[string]any{"extra_packages": []any{"tmux"}, "zfs_arc_max": "1G", "zfs_arc_live": true, "subscription_notice_hook": true}
	if _, err := lab.SSH("pve01", `echo 'APT::Update::Post-Invoke-Success { "touch /var/lib/gopve-hook-ran"; };' > /etc/apt/apt.conf.d/50gopve-test-hook`); err != nil {
		t.Fatal(err)
	}
	labtest.NoWrites(t, lab, "pve_base in check mode", func() {
		res := labtest.Invoke(t, lab, bin, "pve_base", base, true)
		if failed(res) || res["changed"] != true {
			t.Fatalf("pve_base check mode: changed=%v %v", res["changed"], res["msg"])
		}
	})
	zfsArgs := map[string]any{"name": "tank", "devices": []any{"/dev/nvme0n1"}}
	labtest.NoWrites(t, lab, "pve_zfs in check mode", func() {
		res := labtest.Invoke(t, lab, bin, "pve_zfs", zfsArgs, true)
		if failed(res) || res["changed"] != true {
			t.Fatalf("pve_zfs check mode: changed=%v %v", res["changed"], res["msg"])
		}
	})
	if _, err := lab.SSH("pve01", "rm /etc/apt/apt.conf.d/50gopve-test-hook"); err != nil {
		t.Fatal(err)
	}

	// A dist-upgrade whose deadline falls in the middle of the dpkg
	// transaction: dpkg pauses after each of its runs (unpack, then
	// configure), so a killed apt-get would leave packages unpacked but
	// not configured (`dpkg --audit`). The transaction must run to its end
	// and the task fail afterwards naming the step.
	r, err := aptrepo.ReleaseFor(pve)
	if err != nil {
		t.Fatal(err)
	}
	prep := labtest.Invoke(t, lab, bin, "pve_base", map[string]any{"upgrade": "none", "remove_subscription_notice": false}, false)
	if failed(prep) {
		t.Fatalf("preparing the repositories: %v", prep["msg"])
	}
	args := map[string]any{"update_cache": false, "remove_subscription_notice": false}
	start := time.Now()
	if check := labtest.Invoke(t, lab, bin, "pve_base", args, true); failed(check) || !strings.Contains(strings.Join(changes(check), "\n"), "dist-upgrade") {
		t.Fatalf("check mode must predict the dist-upgrade: %v %q", check["msg"], changes(check))
	}
	planning := time.Since(start)
	args["timeout"] = 2*planning.Seconds() + 2.5 // past planning, well inside the transaction (≥ 10 s of dpkg pauses)

	// Issue 15 item 9: only the dpkg transaction is uninterruptible; the
	// download before it runs under the deadline. A mirror that stalls
	// every package: the task fails at its deadline naming the step, with
	// nothing installed and nothing changed (the 30 s stall outlasts the
	// deadline many times: a download left to finish would end by installing).
	lab.SlowAPTDownloads(30 * time.Second)
	stalled := labtest.Invoke(t, lab, bin, "pve_base", args, false)
	lab.SlowAPTDownloads(0)
	smsg, _ := stalled["msg"].(string)
	t.Logf("stalled mirror: %s", smsg)
	if !failed(stalled) || !strings.Contains(smsg, "timed out after") || !strings.Contains(smsg, "while applying dist-upgrade") || strings.Contains(smsg, "was left to finish") {
		t.Errorf("want a timeout in the download of the dist-upgrade, not a transaction left to finish; got failed=%v %q", stalled["failed"], smsg)
	}
	if stalled["changed"] != false {
		t.Errorf("an interrupted download changed nothing: changed=%v unverified=%q", stalled["changed"], stalled["changes_unverified"])
	}
	if v, _ := lab.SSH("pve01", "dpkg-query -W -f '${Version}' pve-manager"); v != r.ManagerInstalled {
		t.Errorf("pve-manager %q after the stalled download, want %s untouched", v, r.ManagerInstalled)
	}
	if audit, err := lab.SSH("pve01", "dpkg --audit; echo rc=$?"); err != nil || audit != "rc=0\n" {
		t.Errorf("dpkg --audit after the stalled download: %q %v", audit, err)
	}

	if _, err := lab.SSH("pve01", "echo 'post-invoke=sleep 5' > /etc/dpkg/dpkg.cfg.d/zz-gopve-slow"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	res := labtest.Invoke(t, lab, bin, "pve_base", args, false)
	took := time.Since(start)
	msg, _ := res["msg"].(string)
	t.Logf("planning %s, timeout %.1fs, run %s: %s", planning.Round(time.Millisecond), args["timeout"], took.Round(time.Millisecond), msg)
	if !failed(res) || !strings.Contains(msg, "timed out after") || !strings.Contains(msg, "while applying dist-upgrade") || !strings.Contains(msg, "was left to finish") {
		t.Errorf("want a timeout naming the dist-upgrade step, left to finish; got failed=%v %q", res["failed"], msg)
	}
	if res["changed"] != true || len(strs(res["changes_unverified"])) != 1 {
		t.Errorf("the finished upgrade must count as made: changed=%v unverified=%q", res["changed"], res["changes_unverified"])
	}
	if audit, err := lab.SSH("pve01", "dpkg --audit; echo rc=$?"); err != nil || audit != "rc=0\n" {
		t.Errorf("dpkg --audit after the timed-out run: %q %v", audit, err)
	}
	if policy, _ := lab.SSH("pve01", "dpkg-query -W -f '${Version}' pve-manager"); policy != r.ManagerNew {
		t.Errorf("pve-manager %q after the run, want the transaction finished at %s", policy, r.ManagerNew)
	}
	if _, err := lab.SSH("pve01", "rm /etc/dpkg/dpkg.cfg.d/zz-gopve-slow"); err != nil {
		t.Fatal(err)
	}
}
