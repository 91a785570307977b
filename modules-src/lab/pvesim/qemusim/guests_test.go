package qemusim_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

var macRe = regexp.MustCompile(`^virtio=BC:24:11:[0-9A-F]{2}:[0-9A-F]{2}:[0-9A-F]{2},bridge=vmbr0$`)

// Create: the config is a file in nodes/<node>/qemu-server whose SHA-1 is
// the digest, NICs get generated MACs, disks become sized volumes on their
// storage, cloud-init keys are kept (K12, sshkeys URL-encoded as sent);
// /cluster/resources lists the VM; nextid is a hint that reserves nothing (K18).
func TestVMCreateConfigResourcesK12K18(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	if id := c.Call("GET", "/cluster/nextid", nil).Must(t, "nextid").Data; id != "100" {
		t.Fatalf("nextid on an empty cluster = %v", id)
	}
	// URL-encoded as community.proxmox does (urllib quote, %20 for blanks;
	// QueryEscape's "+" is refused by the schema's urlencoded format).
	keys := strings.ReplaceAll(url.QueryEscape(testSSHKey+" lab@example"), "+", "%20")
	simtest.CreateVM(t, c, 100, url.Values{"ide2": {"local-lvm:cloudinit"}, "ciuser": {"debian"}, "sshkeys": {keys},
		"ipconfig0": {"ip=dhcp"}, "agent": {"enabled=1"}, "tags": {"web;prod"}, "onboot": {"1"}})
	conf := simtest.VMConfig(t, c, "pve01", 100)
	if !macRe.MatchString(fmt.Sprint(conf["net0"])) {
		t.Errorf("net0 = %v, want a generated BC:24:11 MAC", conf["net0"])
	}
	if conf["scsi0"] != "local-lvm:vm-100-disk-0,size=8G" {
		t.Errorf("scsi0 = %v", conf["scsi0"])
	}
	if conf["ide2"] != "local-lvm:vm-100-cloudinit,media=cdrom" {
		t.Errorf("ide2 = %v", conf["ide2"])
	}
	if conf["sshkeys"] != keys || conf["ciuser"] != "debian" || conf["agent"] != "enabled=1" || conf["onboot"] != float64(1) {
		t.Errorf("cloud-init/agent/onboot keys: %v", conf)
	}
	if _, locked := conf["lock"]; locked {
		t.Errorf("lock left after create: %v", conf["lock"])
	}
	raw, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/100.conf")
	if !ok || !strings.Contains(raw, "scsi0: local-lvm:vm-100-disk-0,size=8G\n") {
		t.Fatalf("config file: %q", raw)
	}
	sum := sha1.Sum([]byte(raw))
	if conf["digest"] != hex.EncodeToString(sum[:]) {
		t.Errorf("digest %v is not the SHA-1 of the file", conf["digest"])
	}
	var found bool
	for _, e := range c.Call("GET", "/cluster/resources", url.Values{"type": {"vm"}}).Must(t, "resources").List() {
		if e["id"] == "qemu/100" && e["node"] == "pve01" && e["name"] == "vm100" && e["status"] == "stopped" &&
			e["maxdisk"] == float64(8<<30) && e["template"] == float64(0) {
			found = true
		}
	}
	if !found {
		t.Error("qemu/100 missing from /cluster/resources?type=vm")
	}
	content := c.Call("GET", "/nodes/pve01/storage/local-lvm/content", nil).Must(t, "content").List()
	if len(content) != 2 || content[1]["volid"] != "local-lvm:vm-100-disk-0" || content[1]["size"] != float64(8<<30) {
		t.Errorf("storage content: %v", content)
	}
	// K18: nextid answers 101 twice: nothing is reserved between two callers.
	for i := 0; i < 2; i++ {
		if id := c.Call("GET", "/cluster/nextid", nil).Must(t, "nextid").Data; id != "101" {
			t.Fatalf("nextid = %v", id)
		}
	}
	r := c.Call("GET", "/cluster/nextid", url.Values{"vmid": {"100"}})
	if r.Status != 400 || !strings.Contains(fmt.Sprint(r.Errs["vmid"]), "VM 100 already exists") {
		t.Errorf("nextid?vmid=100: %d %v", r.Status, r.Body)
	}
	r = c.Call("POST", "/nodes/pve01/qemu", url.Values{"vmid": {"100"}})
	if r.Status != 500 || r.Reason != "unable to create VM 100 - VM 100 already exists on node 'pve01'" {
		t.Errorf("create over an existing VM: %d %q", r.Status, r.Reason)
	}
	r = c.Call("GET", "/nodes/pve01/qemu/999/config", nil)
	if r.Status != 500 || r.Reason != "Configuration file 'nodes/pve01/qemu-server/999.conf' does not exist" {
		t.Errorf("missing config: %d %q", r.Status, r.Reason)
	}
}

// Start, stop and shutdown are tasks whose effect the status shows; a
// template refuses to start.
func TestVMPowerTasks(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 100, nil)
	status := func() string {
		return fmt.Sprint(c.Call("GET", "/nodes/pve01/qemu/100/status/current", nil).Must(t, "status").Obj()["status"])
	}
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/start", nil); st["exitstatus"] != "OK" || st["type"] != "qmstart" {
		t.Fatalf("start: %v", st)
	}
	if status() != "running" {
		t.Fatal("not running after start")
	}
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/start", nil); st["exitstatus"] != "VM 100 already running" {
		t.Errorf("second start: %v", st)
	}
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/shutdown", nil); st["exitstatus"] != "OK" || status() != "stopped" {
		t.Errorf("shutdown: %v, status %s", st, status())
	}
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/stop", nil); st["exitstatus"] != "OK" {
		t.Errorf("stop of a stopped VM: %v", st)
	}
	simtest.MakeTemplate(t, c, 9000, nil)
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/9000/status/start", nil); st["exitstatus"] != "you can't start a vm if it's a template" {
		t.Errorf("template start: %v", st)
	}
	conf := simtest.VMConfig(t, c, "pve01", 9000)
	if conf["template"] != float64(1) || conf["scsi0"] != "local-lvm:base-9000-disk-0,size=8G" {
		t.Errorf("template config: %v", conf)
	}
}

// K2, K3, K4: a clone runs as qmclone on the template's node with the
// source VMID as task id; the URL must name the template's node; the new
// config sits on the source node locked "clone" and reaches the target only
// at the end; local disks cannot go to another node; linked clones share
// the base volume; a duplicate name is fine (K1).
func TestCloneK1K2K3K4(t *testing.T) {
	t.Parallel()
	s, a, b := simtest.TwoNodes(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond})
	a.Call("POST", "/storage", url.Values{"storage": {"shared"}, "type": {"nfs"}, "server": {"10.0.0.9"},
		"export": {"/srv"}, "path": {"/mnt/pve/shared"}, "content": {"images"}}).Must(t, "nfs storage")
	simtest.MakeTemplate(t, a, 9000, url.Values{"scsi0": {"shared:4"}, "ide2": {"shared:cloudinit"}})
	simtest.MakeTemplate(t, a, 9001, nil) // on local-lvm
	tmplNet := fmt.Sprint(simtest.VMConfig(t, a, "pve01", 9000)["net0"])

	// K2: the URL names pve02, which does not hold the template.
	r := b.Call("POST", "/nodes/pve02/qemu/9000/clone", url.Values{"newid": {"120"}})
	if r.Status != 500 || r.Reason != "unable to find configuration file for VM 9000 on node 'pve02'" {
		t.Errorf("clone on the wrong node: %d %q", r.Status, r.Reason)
	}
	r = a.Call("POST", "/nodes/pve01/qemu/9001/clone", url.Values{"newid": {"120"}, "target": {"pve02"}})
	if r.Status != 500 || r.Reason != "can't clone VM to node 'pve02' (VM uses local storage)" {
		t.Errorf("local disks to another node: %d %q", r.Status, r.Reason)
	}
	r = a.Call("POST", "/nodes/pve01/qemu/9001/clone", url.Values{"newid": {"120"}, "storage": {"shared"}})
	if r.Status != 500 || r.Reason != "parameter 'storage' not allowed for linked clones" {
		t.Errorf("storage on a linked clone: %d %q", r.Status, r.Reason)
	}

	// K3/K4: a full clone to pve02, slow enough to watch.
	if _, err := s.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultSlowConfig, Delay: 400 * time.Millisecond, Count: 1}); err != nil {
		t.Fatal(err)
	}
	upid := a.Call("POST", "/nodes/pve01/qemu/9000/clone", url.Values{"newid": {"120"}, "target": {"pve02"},
		"full": {"1"}, "name": {"vm9000"}}).Must(t, "clone").Data.(string)
	if !strings.HasPrefix(upid, "UPID:pve01:") || !strings.Contains(upid, ":qmclone:9000:") {
		t.Fatalf("clone UPID %q: want node pve01, type qmclone, id 9000", upid)
	}
	simtest.Eventually(t, "temporary config on the source node", func() bool {
		raw, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/120.conf")
		return ok && strings.Contains(raw, "lock: clone")
	})
	r = a.Call("PUT", "/nodes/pve01/qemu/120/config", url.Values{"cores": {"4"}})
	if r.Status != 500 || r.Reason != "VM is locked (clone)" {
		t.Errorf("config change during the clone: %d %q", r.Status, r.Reason)
	}
	if st := simtest.WaitTask(t, a, upid); st["exitstatus"] != "OK" {
		t.Fatalf("clone task: %v", st)
	}
	r = b.Call("GET", "/nodes/pve02/qemu/120/config", nil)
	if r.Status != 500 || r.Reason != "Configuration file 'nodes/pve02/qemu-server/120.conf' does not exist" {
		t.Errorf("K4: config on the target right after the task: %d %q", r.Status, r.Reason)
	}
	var conf map[string]any
	simtest.Eventually(t, "config on the target", func() bool {
		r := b.Call("GET", "/nodes/pve02/qemu/120/config", nil)
		conf = r.Obj()
		return r.Status == 200
	})
	if _, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/120.conf"); ok {
		t.Error("config still on the source node after the move")
	}
	if conf["lock"] != nil || conf["template"] != nil || conf["name"] != "vm9000" {
		t.Errorf("clone config: %v", conf)
	}
	if conf["net0"] == tmplNet || !macRe.MatchString(fmt.Sprint(conf["net0"])) {
		t.Errorf("clone NIC %v: want a new MAC (template has %v)", conf["net0"], tmplNet)
	}
	if conf["scsi0"] != "shared:120/vm-120-disk-0.raw,size=4G" || conf["ide2"] != "shared:120/vm-120-cloudinit.qcow2,media=cdrom" {
		t.Errorf("clone disks: %v %v", conf["scsi0"], conf["ide2"])
	}
	// K1: the name is now taken twice; the VMIDs tell them apart.
	names := 0
	for _, e := range a.Call("GET", "/cluster/resources", url.Values{"type": {"vm"}}).Must(t, "resources").List() {
		if e["name"] == "vm9000" {
			names++
		}
	}
	if names != 2 {
		t.Errorf("%d guests named vm9000, want the template and its clone", names)
	}

	// Linked clone of the local-lvm template on its own node: its volume
	// lives on the template's base volume.
	st := simtest.MustTask(t, a, "POST", "/nodes/pve01/qemu/9001/clone", url.Values{"newid": {"121"}})
	if st["exitstatus"] != "OK" {
		t.Fatalf("linked clone: %v", st)
	}
	conf = simtest.VMConfig(t, a, "pve01", 121)
	if conf["scsi0"] != "local-lvm:base-9001-disk-0/vm-121-disk-0,size=8G" || conf["name"] != "Copy-of-VM-vm9001" {
		t.Errorf("linked clone: %v", conf)
	}
	r = a.Call("POST", "/nodes/pve01/qemu/9001/clone", url.Values{"newid": {"121"}})
	if r.Status != 500 || r.Reason != "unable to create VM 121: config file already exists" {
		t.Errorf("clone onto an existing VMID: %d %q", r.Status, r.Reason)
	}
	// A VMID held by another node passes clone_vm's -f check (it looks on
	// the template's node only) and fails in the worker: pmxcfs refuses the
	// temporary config (memdb.c vmlist_different_vm_exists), nothing made.
	if err := s.AddGuest("pve02", pvesim.GuestSpec{VMID: 122, Config: map[string]string{"name": "elsewhere"}}); err != nil {
		t.Fatal(err)
	}
	st = simtest.MustTask(t, a, "POST", "/nodes/pve01/qemu/9001/clone", url.Values{"newid": {"122"}})
	if st["exitstatus"] != "close (rename) atomic file '/etc/pve/nodes/pve01/qemu-server/122.conf' failed: File exists" {
		t.Errorf("clone onto a VMID of another node: %v", st)
	}
	if conf := simtest.VMConfig(t, a, "pve02", 122); conf["name"] != "elsewhere" {
		t.Errorf("the other node's VM after the refused clone: %v", conf)
	}
}

// K13, K18: clones of one stopped template share its lock and run side by
// side; two workers that took the same nextid answer collide on the new
// VMID's lock; many at once queue on the storage lock and the last ones
// time out.
func TestConcurrentClonesK13K18(t *testing.T) {
	t.Parallel()
	s := simtest.StartWith(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond, LockTimeout: 300 * time.Millisecond}, func(c *pvesim.Config) {
		c.CloneDuration = 200 * time.Millisecond
		c.AllocDuration = 100 * time.Millisecond
	})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.MakeTemplate(t, c, 9000, nil)

	// K18: both callers got 100 from nextid. The loser fails at once if the
	// winner's temporary config is already there, or in its task on the new
	// VMID's lock if not (as in PVE, timing decides which).
	id := c.Call("GET", "/cluster/nextid", nil).Must(t, "nextid").Data.(string)
	var wg sync.WaitGroup
	outcome := make([]string, 2)
	for i := range outcome {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := c.Call("POST", "/nodes/pve01/qemu/9000/clone", url.Values{"newid": {id}, "full": {"1"}})
			if r.Status != 200 {
				outcome[i] = r.Reason
				return
			}
			outcome[i] = fmt.Sprint(simtest.WaitTask(t, c, r.Data.(string))["exitstatus"])
		}(i)
	}
	wg.Wait()
	loser := outcome[0]
	if loser == "OK" {
		loser = outcome[1]
	}
	lockMsg := "can't lock file '/var/lock/qemu-server/lock-" + id + ".conf' - got timeout"
	existsMsg := "unable to create VM " + id + ": config file already exists"
	if !(outcome[0] == "OK" || outcome[1] == "OK") || loser != lockMsg && loser != existsMsg {
		t.Errorf("same newid twice: %q", outcome)
	}

	// K13: eight full clones at once: the template's shared lock lets them
	// all start; the storage lock (100 ms each, 300 ms timeout) does not.
	results := make([]string, 8)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := c.Call("POST", "/nodes/pve01/qemu/9000/clone", url.Values{"newid": {fmt.Sprint(200 + i)}, "full": {"1"}})
			if r.Status != 200 {
				results[i] = r.Reason
				return
			}
			results[i] = fmt.Sprint(simtest.WaitTask(t, c, r.Data.(string))["exitstatus"])
		}(i)
	}
	wg.Wait()
	ok, timedOut := 0, 0
	for _, r := range results {
		switch r {
		case "OK":
			ok++
		case "clone failed: can't lock file '/var/lock/pve-manager/pve-storage-local-lvm' - got timeout":
			timedOut++
		default:
			t.Errorf("unexpected clone result %q", r)
		}
	}
	if ok < 2 || timedOut == 0 {
		t.Errorf("8 parallel clones: %d OK, %d storage-lock timeouts; want several of each", ok, timedOut)
	}
	// A failed clone leaves neither config nor volume behind.
	for i, r := range results {
		if r == "OK" {
			continue
		}
		if _, ok, _ := s.ReadPmxcfs("pve01", fmt.Sprintf("nodes/pve01/qemu-server/%d.conf", 200+i)); ok {
			t.Errorf("config of failed clone %d left behind", 200+i)
		}
	}
}

// Issue 25 §2: POST …/template as qemu-server's template API (PVE 8 and
// 9): refused before any task when the VM runs (and a template refused
// likewise); a qmtemplate task of the caller's user that sets template: 1
// and renames every disk to its base volume (create_base), the cloud-init
// drive left as it is (a CD-ROM to template_create).
func TestVMTemplateAsQemuServer(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 120, url.Values{"ide2": {"local-lvm:cloudinit"}, "scsi1": {"local-lvm:1"}})
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/120/status/start", nil); st["exitstatus"] != "OK" {
		t.Fatalf("start: %v", st)
	}
	tasks := func() int {
		return len(c.Call("GET", "/nodes/pve01/tasks", url.Values{"typefilter": {"qmtemplate"}}).Must(t, "tasks").List())
	}
	if r := c.Call("POST", "/nodes/pve01/qemu/120/template", nil); r.Status != 500 || r.Reason != "you can't convert a VM to template if VM is running" || tasks() != 0 {
		t.Fatalf("template of a running VM: %d %q, %d qmtemplate tasks", r.Status, r.Reason, tasks())
	}
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/120/status/stop", nil); st["exitstatus"] != "OK" {
		t.Fatalf("stop: %v", st)
	}
	st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/120/template", nil)
	if st["exitstatus"] != "OK" || st["type"] != "qmtemplate" || st["id"] != "120" || st["user"] == "" || st["user"] == nil {
		t.Fatalf("template task: %v", st)
	}
	conf := simtest.VMConfig(t, c, "pve01", 120)
	if conf["template"] != float64(1) || conf["scsi0"] != "local-lvm:base-120-disk-0,size=8G" ||
		conf["scsi1"] != "local-lvm:base-120-disk-1,size=1G" || !strings.HasPrefix(fmt.Sprint(conf["ide2"]), "local-lvm:vm-120-cloudinit") || conf["lock"] != nil {
		t.Errorf("template config: %v", conf)
	}
	if r := c.Call("POST", "/nodes/pve01/qemu/120/template", nil); r.Status != 500 || r.Reason != "you can't convert a template to a template" {
		t.Errorf("template of a template: %d %q", r.Status, r.Reason)
	}
	// check_lock: a locked config is refused before any task.
	if err := s.AddGuest("pve01", pvesim.GuestSpec{VMID: 121, Config: map[string]string{"name": "locked", "lock": "backup"}}); err != nil {
		t.Fatal(err)
	}
	if r := c.Call("POST", "/nodes/pve01/qemu/121/template", nil); r.Status != 500 || r.Reason != "VM is locked (backup)" || tasks() != 1 {
		t.Errorf("template of a locked VM: %d %q, %d qmtemplate tasks", r.Status, r.Reason, tasks())
	}
}
