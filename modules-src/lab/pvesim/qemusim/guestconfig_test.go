package qemusim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// PUT /config answers when the change is written; POST /config returns a
// qmconfig task. K16: a NIC sent without its MAC gets a new one (PVE's
// parse_net), sent with it keeps it.
func TestConfigSyncAsyncAndMACsK16(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 100, nil)
	before := simtest.VMConfig(t, c, "pve01", 100)
	mac := qemuserver.NetMAC(fmt.Sprint(before["net0"]))

	r := c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cores": {"4"}, "digest": {fmt.Sprint(before["digest"])}}).Must(t, "PUT")
	if r.Data != nil {
		t.Errorf("PUT config answered %v, want null", r.Data)
	}
	if conf := simtest.VMConfig(t, c, "pve01", 100); conf["cores"] != float64(4) {
		t.Errorf("cores after PUT: %v", conf["cores"])
	}
	r = c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cores": {"5"}, "digest": {fmt.Sprint(before["digest"])}})
	if r.Status != 500 || r.Reason != "checksum mismatch (file change by other user?)" {
		t.Errorf("stale digest: %d %q", r.Status, r.Reason)
	}

	// Same bridge, MAC given: kept.
	simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/config", url.Values{"net0": {"virtio=" + mac + ",bridge=vmbr0,firewall=1"}})
	if got := qemuserver.NetMAC(fmt.Sprint(simtest.VMConfig(t, c, "pve01", 100)["net0"])); got != mac {
		t.Errorf("MAC %s changed to %s although it was sent", mac, got)
	}
	// MAC left out: PVE draws a new one (what K16 warns about).
	st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/config", url.Values{"net0": {"virtio,bridge=vmbr0,firewall=1"}})
	if st["type"] != "qmconfig" || st["exitstatus"] != "OK" {
		t.Fatalf("POST config task: %v", st)
	}
	if got := qemuserver.NetMAC(fmt.Sprint(simtest.VMConfig(t, c, "pve01", 100)["net0"])); got == mac || got == "" {
		t.Errorf("NIC without macaddr kept %s; PVE generates a new MAC", got)
	}
	r = c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cores": {"2"}, "delete": {"cores"}})
	if r.Status != 400 || !strings.Contains(fmt.Sprint(r.Errs["delete"]), "at the same time") {
		t.Errorf("set and delete: %d %v", r.Status, r.Body)
	}
	r = c.Call("PUT", "/nodes/pve01/qemu/100/config", nil)
	if r.Status != 500 || r.Reason != "no options specified" {
		t.Errorf("empty update: %d %q", r.Status, r.Reason)
	}
}

// K10: on a running VM, cores and memory wait in [PENDING] until a restart
// while a NIC is hotplugged at once; GET config shows the pending values
// unless current=1.
func TestPendingOnRunningVMK10(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 100, nil)
	simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/start", nil)
	c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cores": {"8"}, "net1": {"virtio,bridge=vmbr1"}, "name": {"renamed"}}).Must(t, "PUT")
	current := c.Call("GET", "/nodes/pve01/qemu/100/config", url.Values{"current": {"1"}}).Must(t, "current").Obj()
	if current["cores"] != float64(2) || current["net1"] == nil || current["name"] != "renamed" {
		t.Errorf("running VM: cores must stay pending, net1 and name apply at once: %v", current)
	}
	if pend := simtest.VMConfig(t, c, "pve01", 100); pend["cores"] != float64(8) {
		t.Errorf("GET config without current shows pending values: cores %v", pend["cores"])
	}
	var pendingCores bool
	for _, e := range c.Call("GET", "/nodes/pve01/qemu/100/pending", nil).Must(t, "pending").List() {
		if e["key"] == "cores" && e["value"] == float64(2) && e["pending"] == float64(8) {
			pendingCores = true
		}
	}
	if !pendingCores {
		t.Error("pending list lacks cores 2 → 8")
	}
	raw, _, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/100.conf")
	if !strings.Contains(raw, "\n[PENDING]\ncores: 8\n") {
		t.Errorf("config file has no [PENDING] section: %q", raw)
	}
	simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/stop", nil)
	simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/start", nil)
	if cur := c.Call("GET", "/nodes/pve01/qemu/100/config", url.Values{"current": {"1"}}).Must(t, "current").Obj(); cur["cores"] != float64(8) {
		t.Errorf("pending cores not applied by the restart: %v", cur["cores"])
	}
}

// K11: resize is a task; it grows (absolute or +N) and refuses to shrink
// inside the task, with PVE's words; the same size is a no-op.
func TestResizeGrowOnlyK11(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 100, nil)
	resize := func(size string) map[string]any {
		return simtest.MustTask(t, c, "PUT", "/nodes/pve01/qemu/100/resize", url.Values{"disk": {"scsi0"}, "size": {size}})
	}
	if st := resize("+2G"); st["exitstatus"] != "OK" || st["type"] != "resize" {
		t.Fatalf("grow: %v", st)
	}
	if got := simtest.VMConfig(t, c, "pve01", 100)["scsi0"]; got != "local-lvm:vm-100-disk-0,size=10G" {
		t.Errorf("after +2G: %v", got)
	}
	if st := resize("4G"); st["exitstatus"] != "shrinking disks is not supported" {
		t.Errorf("shrink: %v", st)
	}
	if st := resize("10G"); st["exitstatus"] != "OK" {
		t.Errorf("same size: %v", st)
	}
	if st := simtest.MustTask(t, c, "PUT", "/nodes/pve01/qemu/100/resize", url.Values{"disk": {"scsi5"}, "size": {"1G"}}); st["exitstatus"] != "disk 'scsi5' does not exist" {
		t.Errorf("missing disk: %v", st)
	}
	content := c.Call("GET", "/nodes/pve01/storage/local-lvm/content", url.Values{"vmid": {"100"}}).Must(t, "content").List()
	if len(content) != 1 || content[0]["size"] != float64(10<<30) {
		t.Errorf("volume size after resize: %v", content)
	}
}

// A config lock held by a task makes a synchronous update wait for it, and
// fail PVE's way when it waits longer than the lock timeout.
func TestConfigLockContention(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 600 * time.Millisecond, LockTimeout: 200 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 100, nil)
	upid := c.Call("PUT", "/nodes/pve01/qemu/100/resize", url.Values{"disk": {"scsi0"}, "size": {"+1G"}}).Must(t, "resize").Data.(string)
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	r := c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cores": {"3"}})
	if r.Status != 500 || r.Reason != "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout" {
		t.Errorf("PUT while a task holds the lock: %d %q", r.Status, r.Reason)
	}
	if d := time.Since(start); d < 180*time.Millisecond {
		t.Errorf("lock timeout answered after %v, before the lock timeout", d)
	}
	simtest.WaitTask(t, c, upid)
	c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cores": {"3"}}).Must(t, "PUT once the lock is free")

	// "VM is locked (…)": the lock key in the config, not the flock.
	if err := s.WritePmxcfs("pve01", "nodes/pve01/qemu-server/100.conf", "cores: 3\nlock: backup\nscsi0: local-lvm:vm-100-disk-0,size=9G\n", false); err != nil {
		t.Fatal(err)
	}
	r = c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cores": {"4"}})
	if r.Status != 500 || r.Reason != "VM is locked (backup)" {
		t.Errorf("config with lock: backup: %d %q", r.Status, r.Reason)
	}
	r = c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cores": {"4"}, "skiplock": {"1"}})
	if r.Status != 400 || fmt.Sprint(r.Errs["skiplock"]) != "Only root may use this option." {
		t.Errorf("skiplock with root's token: %d %v", r.Status, r.Body)
	}
	simtest.NewClient(t, s, "pve01").Root().Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cores": {"4"}, "skiplock": {"1"}}).Must(t, "skiplock as root@pam")
}

// The cloud-init password never comes back: GET config masks it, an update
// stores it hashed, and the request log hides it.
func TestCloudInitPasswordHidden(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 100, url.Values{"ide2": {"local-lvm:cloudinit"}})
	const pw = "s3cret-Cloud-Pw"
	c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cipassword": {pw}, "ciuser": {"debian"}}).Must(t, "PUT")
	if got := simtest.VMConfig(t, c, "pve01", 100)["cipassword"]; got != "**********" {
		t.Errorf("cipassword in GET config: %v", got)
	}
	raw, _, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/100.conf")
	if strings.Contains(raw, pw) || !strings.Contains(raw, "cipassword: $6$") {
		t.Errorf("config file keeps the password in clear or unhashed: %q", raw)
	}
	for _, e := range s.Requests() {
		if strings.Contains(fmt.Sprint(e.Params), pw) {
			t.Errorf("request log shows the password: %v", e.Params)
		}
	}
}

// C10 for guests: without quorum /etc/pve is read-only — a config update
// cannot write its file, a start refuses, a replication job cannot lock.
func TestGuestsWithoutQuorumC10(t *testing.T) {
	t.Parallel()
	s, a, _ := simtest.TwoNodes(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond, LockTimeout: 50 * time.Millisecond})
	simtest.CreateVM(t, a, 100, nil)
	if err := s.SetOnline("pve02", false); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, "quorum lost", func() bool { return !simtest.Quorate(a, 1) })
	r := a.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"cores": {"4"}})
	if r.Status != 500 || !strings.HasPrefix(r.Reason, "unable to open file '/etc/pve/nodes/pve01/qemu-server/100.conf.tmp.") || !strings.HasSuffix(r.Reason, "' - Permission denied") {
		t.Errorf("config update without quorum: %d %q", r.Status, r.Reason)
	}
	if r := a.Call("POST", "/nodes/pve01/qemu/100/status/start", nil); r.Status != 500 || r.Reason != "cluster not ready - no quorum?" {
		t.Errorf("start without quorum: %d %q", r.Status, r.Reason)
	}
	if r := a.Call("POST", "/nodes/pve01/qemu", url.Values{"vmid": {"101"}}); r.Status != 500 || !strings.HasPrefix(r.Reason, "unable to create VM 101 - unable to open file") {
		t.Errorf("create without quorum: %d %q", r.Status, r.Reason)
	}
	if got := simtest.VMConfig(t, a, "pve01", 100)["cores"]; got != float64(2) {
		t.Errorf("cores changed to %v without quorum", got)
	}
}

// A VM's description is stored as the config's leading "#" lines, each
// encode_text'd (qemu-server $generate_raw_config), and read back
// decode_text'd with trailing white space removed (parse_vm_config's
// $finish_description): ':' and non-ASCII survive, a '%' and two hex
// digits come back decoded, "0" is never written; a clone's description
// goes the same way. (The lab kept it as a "description:" line, which a
// newline in it would have broken.)
func TestVMDescriptionAsQemuServerStoresIt(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").Root()
	simtest.CreateVM(t, c, 100, url.Values{"description": {"web: 1"}})
	if d := simtest.VMConfig(t, c, "pve01", 100)["description"]; d != "web: 1" {
		t.Errorf("description after create: %q", d)
	}
	c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"description": {"runner\n\nowner: ci (100% é) %41\n"}}).Must(t, "PUT description")
	raw, _, err := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/100.conf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(raw, "#runner\n#\n#owner%3A ci (100% %C3%A9) %41\n") || strings.Contains(raw, "description:") {
		t.Errorf("config file (encode_text per line): %q", raw)
	}
	if d := simtest.VMConfig(t, c, "pve01", 100)["description"]; d != "runner\n\nowner: ci (100% é) A" {
		t.Errorf("description after update: %q", d)
	}
	upid := c.Call("POST", "/nodes/pve01/qemu/100/clone", url.Values{"newid": {"101"}, "description": {"copy: of 100"}}).Must(t, "clone").Data.(string)
	if st := simtest.WaitTask(t, c, upid); st["exitstatus"] != "OK" {
		t.Fatalf("clone: %v", st)
	}
	if raw, _, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/101.conf"); !strings.HasPrefix(raw, "#copy%3A of 100\n") {
		t.Errorf("the clone's config: %q", raw)
	}
	c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"description": {"0"}}).Must(t, "PUT 0")
	if d, ok := simtest.VMConfig(t, c, "pve01", 100)["description"]; ok {
		t.Errorf("description \"0\" read back %q: qemu-server writes no Perl-false description", d)
	}
	c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"description": {"x"}}).Must(t, "PUT x")
	c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"delete": {"description"}}).Must(t, "delete description")
	if raw, _, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/100.conf"); strings.HasPrefix(raw, "#") {
		t.Errorf("config after deleting the description: %q", raw)
	}
}

// clone_vm refuses a full clone of a running VM with TPM state unless from
// a snapshot (qemu-server API2/Qemu.pm: "cannot clone TPM state while VM
// is running"); the same VM stopped clones.
func TestCloneRunningTPMState(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").Root()
	simtest.CreateVM(t, c, 100, url.Values{"tpmstate0": {"local-lvm:1,version=v2.0"}})
	simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/start", nil)
	if r := c.Call("POST", "/nodes/pve01/qemu/100/clone", url.Values{"newid": {"101"}, "full": {"1"}}); r.Status != 500 || r.Reason != "cannot clone TPM state while VM is running" {
		t.Errorf("full clone of a running VM with TPM state: %d %q", r.Status, r.Reason)
	}
	simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/stop", nil)
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/clone", url.Values{"newid": {"101"}, "full": {"1"}}); st["exitstatus"] != "OK" {
		t.Errorf("clone of the stopped VM: %v", st)
	}
}
