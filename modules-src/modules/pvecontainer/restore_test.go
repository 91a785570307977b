package pvecontainer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/vzdump"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

const backupVol = "local:backup/vzdump-lxc-200-2026_12_01-03_00_00.tar.zst"

// backupConf is CT 200's pct.conf as vzdump keeps it in the archive, with
// a snapshot section (never restored).
const backupConf = "#GitLab runner%3A nightly\narch: amd64\ncores: 2\nfeatures: keyctl=1,nesting=1\nhostname: gitlab-runner\nmemory: 2048\n" +
	"mp0: tank:subvol-200-disk-1,backup=0,mp=/srv/builds,size=4G\n" +
	"net0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11:AA:BB:01,ip=192.168.3.50/24,gw=192.168.3.1,type=veth\nonboot: 1\nostype: debian\n" +
	"rootfs: tank:subvol-200-disk-0,size=8G\nswap: 512\ntags: ci;runner\nunprivileged: 1\n\n[before-upgrade]\nhostname: old\nmemory: 1024\n"

func restoreWorld(t *testing.T, v int) *world {
	t.Helper()
	data, err := vzdump.CTArchive(backupConf, "zst")
	if err != nil {
		t.Fatal(err)
	}
	return newWorldWith(t, v, map[string][]byte{backupVol: data})
}

func restoreArgs() map[string]any {
	return map[string]any{
		"vmid": 300, "hostname": "runner-restored", "node": "pve01", "restore_from": backupVol,
		"rootfs": map[string]any{"storage": "tank", "size": "10G"},
		"cores":  4,
		"nets":   map[string]any{"net0": map[string]any{"ip": "192.168.3.51/24"}},
	}
}

// restore_from, on PVE 8 and 9 (K15: check mode tells the truth; K16: the
// backup's MAC is kept when the NIC is converged): check mode reads the backup's config
// (extractconfig) and predicts the restored container (the archive's
// keys, its volumes re-created on rootfs.storage with their sizes, named
// per storage type; its snapshot not restored) with the task's settings
// converged on it (rootfs grown, NIC merged key by key with the archive's
// MAC kept), and sends no write; the real run sends one restore (never
// force) and one config change and reads back exactly the prediction;
// the rerun changes nothing and sends nothing.
func TestRestoreFromBackupCheckRealRerun(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := restoreWorld(t, v)
		w.sim.ResetRequests()
		check := w.run(restoreArgs(), true)
		if failed(check) || check["changed"] != true {
			t.Fatalf("PVE %d check: %v", v, msg(check))
		}
		if m := writes(w.sim); len(m) != 0 {
			t.Fatalf("PVE %d: check mode wrote %+v", v, m)
		}
		predicted := cfgOf(check)
		want := map[string]string{
			"arch": "amd64", "cores": "4", "features": "keyctl=1,nesting=1", "hostname": "runner-restored", "memory": "2048",
			"mp0":    "tank:subvol-300-disk-1,backup=0,mp=/srv/builds,size=4G",
			"net0":   "name=eth0,bridge=vmbr0,gw=192.168.3.1,hwaddr=BC:24:11:AA:BB:01,ip=192.168.3.51/24,type=veth",
			"onboot": "1", "ostype": "debian", "rootfs": "tank:subvol-300-disk-0,size=10G", "swap": "512", "tags": "ci;runner",
			"unprivileged": "1", "description": "GitLab runner: nightly\n",
		}
		for k, val := range want {
			if predicted[k] != val {
				t.Errorf("PVE %d prediction %s: %q, want %q", v, k, predicted[k], val)
			}
		}
		if len(predicted) != len(want) {
			t.Errorf("PVE %d prediction has other keys: %v", v, predicted)
		}
		w.sim.ResetRequests()
		real := w.run(restoreArgs(), false)
		if failed(real) || real["changed"] != true {
			t.Fatalf("PVE %d real: %v", v, msg(real))
		}
		got := w.config("pve01", 300, false)
		for k, val := range predicted {
			if strings.TrimRight(got[k], "\n") != strings.TrimRight(val, "\n") {
				t.Errorf("PVE %d %s: predicted %q, read back %q", v, k, val, got[k])
			}
		}
		for k := range got {
			if _, ok := predicted[k]; !ok {
				t.Errorf("PVE %d: %s=%q read back, not predicted", v, k, got[k])
			}
		}
		var restores, puts int
		for _, r := range writes(w.sim) {
			switch {
			case r.Method == "POST" && r.Path == "/nodes/pve01/lxc":
				restores++
				if fmt.Sprint(r.Params["restore"]) != "1" || r.Params["force"] != "" || fmt.Sprint(r.Params["ostemplate"]) != backupVol {
					t.Errorf("PVE %d restore call: %v", v, r.Params)
				}
			case r.Method == "PUT" || r.Path == "/nodes/pve01/lxc/300/resize":
				puts++
			}
		}
		if restores != 1 || puts == 0 {
			t.Errorf("PVE %d: %d restores and %d config writes sent (the lab saw %v)", v, restores, puts, writes(w.sim))
		}
		w.sim.ResetRequests()
		again := w.run(restoreArgs(), false)
		if failed(again) || again["changed"] != false {
			t.Errorf("PVE %d rerun: %v %v", v, again["changed"], msg(again))
		}
		if m := writes(w.sim); len(m) != 0 {
			t.Errorf("PVE %d: rerun wrote %+v", v, m)
		}
	}
}

// What restore_from refuses, before any write: ostemplate with it (both
// named), a volume that is no CT backup, a backup missing on the node,
// password (a restore sets none). An existing VMID is never restored
// over: it is converged (here refused, its hostname is another's: K1).
func TestRestoreRefusedBeforeWrite(t *testing.T) {
	w := restoreWorld(t, 9)
	cases := []struct {
		args map[string]any
		want string
	}{
		{with(restoreArgs(), "ostemplate", tmpl), "parameters are mutually exclusive: ostemplate|restore_from"},
		{with(restoreArgs(), "restore_from", tmpl), "restore_from: \"" + tmpl + "\" is not a container backup volume"},
		{with(restoreArgs(), "restore_from", "local:backup/vzdump-lxc-201-2026_12_01-03_00_00.tar.zst"), "restore_from: cannot read the configuration of"},
		{with(restoreArgs(), "password", "Pw-123456"), "password, ssh_public_keys: a restore does not set them"},
	}
	for _, c := range cases {
		w.sim.ResetRequests()
		res := w.run(c.args, false)
		if !failed(res) || !strings.Contains(msg(res), c.want) {
			t.Errorf("%v: %v %q, want %q", c.args, res["failed"], msg(res), c.want)
		}
		if m := writes(w.sim); len(m) != 0 {
			t.Errorf("%q: wrote %+v", c.want, m)
		}
	}
	if res := w.run(restoreArgs(), false); failed(res) {
		t.Fatal(msg(res))
	}
	w.sim.ResetRequests()
	res := w.run(with(restoreArgs(), "hostname", "other"), false)
	if !failed(res) || !strings.Contains(msg(res), `not "other"`) {
		t.Errorf("restore over an existing CT: %q", msg(res))
	}
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Path != "/access/ticket" {
			t.Errorf("restore over an existing CT wrote %v", r)
		}
	}
}

// A lost answer to the restore is settled by proof that the new VMID is
// this task's (its vzrestore task in the node's list, run as this token,
// and the hostname sent): changed, the restore sent once.
func TestLostRestoreAnswerSettledWithProof(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := restoreWorld(t, v)
		if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/pve01/lxc", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
			t.Fatal(err)
		}
		w.sim.ResetRequests()
		res := w.run(restoreArgs(), false)
		if failed(res) || res["changed"] != true {
			t.Fatalf("PVE %d: %v", v, msg(res))
		}
		var restores int
		for _, r := range writes(w.sim) {
			if r.Method == "POST" && r.Path == "/nodes/pve01/lxc" {
				restores++
			}
		}
		if restores != 1 {
			t.Errorf("PVE %d: the restore was sent %d times", v, restores)
		}
		if c := w.config("pve01", 300, false); c["hostname"] != "runner-restored" || c["lock"] != "" || c["cores"] != "4" {
			t.Errorf("PVE %d: %v", v, c)
		}
		if again := w.run(restoreArgs(), false); again["changed"] != false {
			t.Errorf("PVE %d rerun: %v", v, msg(again))
		}
	}
}
