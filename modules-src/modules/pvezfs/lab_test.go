package pvezfs

// End-to-end test against the lab: the real gopve binary runs inside a
// simulated PVE 8 or 9 node whose disks have real by-id links and signatures
// (nvme0n1 blank, sdb ext4, sdc GPT) and whose zpool/zfs/systemctl are the
// lab's stand-ins. Check mode first (zero writes), the real run changes what
// was predicted, the second run changes nothing.

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

// invoke runs pve_zfs on pve01 of the lab (see labtest.Invoke).
func invoke(t *testing.T, lab *labctl.Lab, bin string, args map[string]any, check bool) map[string]any {
	t.Helper()
	return labtest.Invoke(t, lab, bin, "pve_zfs", args, check)
}

// zfsState is what check mode must leave untouched: pools, datasets and
// their properties, signatures, the scrub timers, and the stand-ins' state:
// zfs.json, and which units systemd.json has enabled and active (not their
// activation times: a stop and start is a new activation) — not
// systemctl.log, see jobLog.
const zfsState = `zpool list -H -o name; zfs list -H -o name,mountpoint; zfs get -H -o name,property,value,source all 2>/dev/null; for d in /dev/nvme0n1 /dev/sdb /dev/sdc; do blkid -p $d; echo "$d $?"; done; for p in monthly weekly; do systemctl is-enabled zfs-scrub-$p@nvme-vm.timer; systemctl is-active zfs-scrub-$p@nvme-vm.timer; done; cd /var/lib/gopve-lab && sha256sum zfs.json 2>&1; python3 -c "import json; d=json.load(open('systemd.json')); [print(k, v.get('enabled', ''), v['active']) for k, v in sorted(d['units'].items())]" 2>&1; true`

// jobLog lists the jobs the systemctl stand-in ran, without the time stamp
// and counter ("enable zfs-scrub-monthly@nvme-vm.timer").
const jobLog = `cut -d' ' -f2,3 /var/lib/gopve-lab/systemctl.log 2>/dev/null; true`

// testLabBadInput: bad input on a fresh node (where a valid run would create
// a pool) fails naming the parameter, and nothing changes: no pool, no
// label, no signature wiped, no systemctl job.
func testLabBadInput(t *testing.T, lab *labctl.Lab, bin string, state func() string) {
	t.Helper()
	for _, tc := range []struct {
		name  string
		args  map[string]any
		param string
	}{
		{"unknown option", map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme0n1"}, "ashfit": 12}, "ashfit"},
		// Z2: a kernel name that resolves to nothing.
		{"missing device", map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme9n9"}}, "/dev/nvme9n9"},
		{"mirror of one", map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme0n1"}, "layout": "mirror"}, "devices"},
		{"raidz2 of two", map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme0n1", "/dev/sdc"}, "layout": "raidz2"}, "devices"},
		// Z5: mountpoint none without allow_unmounted.
		{"unmounted pool", map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme0n1"}, "mountpoint": "none"}, "mountpoint"},
	} {
		before, jobs := state(), mustSSH(t, lab, jobLog)
		// -vv returns the commands the module ran: bad input must be refused
		// before any command that could change the node (a zpool create
		// that zpool itself happens to refuse is a bug too).
		args := map[string]any{"_ansible_verbosity": 2}
		for k, v := range tc.args {
			args[k] = v
		}
		res := invoke(t, lab, bin, args, false)
		if cmds, _ := res["commands"].([]any); len(writers(cmds)) > 0 {
			t.Errorf("%s: commands with side effects ran before the input was refused: %q", tc.name, writers(cmds))
		}
		msg, _ := res["msg"].(string)
		if !failed(res) || !strings.Contains(msg, tc.param) {
			t.Errorf("%s: want a failure naming %s, got failed=%v msg=%q", tc.name, tc.param, res["failed"], msg)
		}
		if res["changed"] == true {
			t.Errorf("%s: a refused input reports changed", tc.name)
		}
		if after := state(); after != before {
			t.Errorf("%s: the node changed:\n%s\n---\n%s", tc.name, before, after)
		}
		if after := mustSSH(t, lab, jobLog); after != jobs {
			t.Errorf("%s: systemctl jobs ran: %q", tc.name, strings.TrimPrefix(after, jobs))
		}
	}
}

// testLabDrift runs on a converged pool: one thing is changed by hand; check
// mode must predict exactly that one change and write nothing, the real run
// must make it, say it (its changes list), run only the systemctl jobs it needs, and bring the
// node back to its converged state.
func testLabDrift(t *testing.T, lab *labctl.Lab, bin string, args map[string]any, state func() string) {
	t.Helper()
	for _, tc := range []struct {
		name, by string
		want     string   // the one change
		jobs     []string // the systemctl jobs it takes
	}{
		// Z5: mountpoint=none breaks LXC volumes.
		{"Z5 mountpoint", "zfs set mountpoint=none nvme-vm", "set mountpoint=/nvme-vm on nvme-vm (was none)", nil},
		// Z6: the monthly scrub timer disabled and stopped.
		{"Z6 scrub timer", "systemctl disable --now zfs-scrub-monthly@nvme-vm.timer", "enable and start zfs-scrub-monthly@nvme-vm.timer",
			[]string{"enable zfs-scrub-monthly@nvme-vm.timer", "start zfs-scrub-monthly@nvme-vm.timer"}},
	} {
		converged := state()
		if _, err := lab.SSH("pve01", tc.by); err != nil {
			t.Fatalf("%s: %s: %v", tc.name, tc.by, err)
		}
		drifted, jobs := state(), mustSSH(t, lab, jobLog)
		if drifted == converged {
			t.Fatalf("%s: %q changed nothing", tc.name, tc.by)
		}
		check := invoke(t, lab, bin, args, true)
		if failed(check) || !reflect.DeepEqual(changes(check), []string{tc.want}) {
			t.Errorf("%s: check mode predicted %q (%v), want only %q", tc.name, changes(check), check["msg"], tc.want)
		}
		if after := state(); after != drifted || mustSSH(t, lab, jobLog) != jobs {
			t.Fatalf("%s: check mode changed the node:\n%s\n---\n%s", tc.name, drifted, after)
		}
		real := invoke(t, lab, bin, args, false)
		if failed(real) || !reflect.DeepEqual(changes(real), []string{tc.want}) {
			t.Errorf("%s: the real run changed %q (%v), want only %q", tc.name, changes(real), real["msg"], tc.want)
		}
		if after := state(); after != converged {
			t.Errorf("%s: not back to the converged state:\n%s\n---\n%s", tc.name, converged, after)
		}
		ran := nonEmpty(strings.Split(strings.TrimPrefix(mustSSH(t, lab, jobLog), jobs), "\n"))
		if !reflect.DeepEqual(ran, nonEmpty(tc.jobs)) {
			t.Errorf("%s: systemctl jobs %q, want %q", tc.name, ran, tc.jobs)
		}
	}
}

// readOnly are the commands that only look at the node.
var readOnly = regexp.MustCompile(`^(zpool (list|status|get)|zfs (list|get)|blkid|systemctl (show|is-enabled|is-active|status|list-unit-files|list-units)) `)

// writers picks, from a result's "commands" (-vv), those that are not
// read-only.
func writers(cmds []any) []string {
	var out []string
	for _, c := range cmds {
		m, _ := c.(map[string]any)
		if cmd, _ := m["cmd"].(string); !readOnly.MatchString(cmd + " ") {
			out = append(out, cmd)
		}
	}
	return out
}

func nonEmpty(xs []string) []string {
	out := []string{}
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func mustSSH(t *testing.T, lab *labctl.Lab, cmd string) string {
	t.Helper()
	out, err := lab.SSH("pve01", cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return out
}

func TestLabPVE8(t *testing.T) {
	t.Parallel()
	testLab(t, 8)
}
func TestLabPVE9(t *testing.T) {
	t.Parallel()
	testLab(t, 9)
}

func testLab(t *testing.T, pve int) {
	lab, _ := labtest.Start(t, pve, 1)
	bin := labtest.NodeBinary
	state := func() string {
		out, err := lab.SSH("pve01", zfsState)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	args := map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme0n1"}}

	// Z3: a disk with a filesystem is refused, naming it, and nothing changes.
	before := state()
	res := invoke(t, lab, bin, map[string]any{"name": "tank", "devices": []any{"/dev/sdb"}}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "ext4") || !strings.Contains(res["msg"].(string), "/dev/disk/by-id/") {
		t.Errorf("Z3: msg = %v", res["msg"])
	}
	if after := state(); after != before {
		t.Fatalf("Z3: the refused run changed the node:\n%s\n---\n%s", before, after)
	}
	testLabBadInput(t, lab, bin, state)
	check := invoke(t, lab, bin, args, true)
	if failed(check) || check["changed"] != true {
		t.Fatalf("check mode: %v", check["msg"])
	}
	if after := state(); after != before {
		t.Fatalf("check mode changed the node:\n%s\n---\n%s", before, after)
	}
	real := invoke(t, lab, bin, args, false)
	if failed(real) {
		t.Fatalf("real run: %v", real["msg"])
	}
	if !reflect.DeepEqual(changes(real), changes(check)) {
		t.Errorf("real %q != predicted %q", changes(real), changes(check))
	}
	// Z2: the pool is built on the by-id name.
	status, _ := lab.SSH("pve01", "zpool status -P nvme-vm; zfs get -H -o value mountpoint,compression,acltype nvme-vm; systemctl is-active zfs-scrub-monthly@nvme-vm.timer")
	if !strings.Contains(status, "/dev/disk/by-id/nvme-eui.") || !strings.Contains(status, "/nvme-vm\nlz4\nposix\nactive") {
		t.Errorf("pool after creation:\n%s", status)
	}
	pool, _ := real["pool"].(map[string]any)
	if pool["health"] != "ONLINE" || pool["layout"] != "single" {
		t.Errorf("returned pool = %v", pool)
	}
	again := invoke(t, lab, bin, args, false)
	if failed(again) || again["changed"] != false {
		t.Fatalf("Z1 rerun: %v %q", again["msg"], again["changes"])
	}
	testLabDrift(t, lab, bin, args, state)
	testLabEdges(t, lab, bin, args, state)
	// Z4: another ashift fails, destroys nothing.
	res = invoke(t, lab, bin, map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme0n1"}, "ashift": 9}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "ashift") {
		t.Errorf("Z4: %v", res["msg"])
	}
	if out, _ := lab.SSH("pve01", "zpool list -H -o name"); out != "nvme-vm\n" {
		t.Errorf("pools after the Z4 refusal: %q", out)
	}
}
