package qemusim_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// qmPermPrivs are what the VM create below needs from qemu-server
// (qemusim/perm.go): VM.Allocate (create_vm itself), the VM.Config.* of each
// option (boot is VM.Config.Disk's), SDN.Use on the NIC's bridge and
// Datastore.AllocateSpace on the new disk's storage.
var qmPermPrivs = []string{"Datastore.AllocateSpace", "SDN.Use", "VM.Allocate", "VM.Config.CPU", "VM.Config.Disk",
	"VM.Config.Memory", "VM.Config.Network", "VM.Config.Options"}

func qmCreateParams(vmid int) url.Values {
	return url.Values{"vmid": {fmt.Sprint(vmid)}, "name": {"web"}, "cores": {"2"}, "memory": {"1024"},
		"scsi0": {"local-lvm:4"}, "boot": {"order=scsi0"}, "net0": {"virtio,bridge=vmbr0"}}
}

// A VM create with exactly qmPermPrivs succeeds; with one fewer it is
// refused with PVE's 403 and leaves no config. VM.Allocate's failed
// alternatives (/vms/<vmid>, /pool/<pool>) raise_perm_exc() answers without
// a detail (qemu-server API2/Qemu.pm create_vm), as pve-container's does.
func TestQemuCreatePrivilegesOneFewer(t *testing.T) {
	want := map[string]string{
		"Datastore.AllocateSpace": "Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)",
		"SDN.Use":                 "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)",
		"VM.Allocate":             "Permission check failed",
		"VM.Config.CPU":           "Permission check failed (/vms/300, VM.Config.CPU)",
		"VM.Config.Disk":          "Permission check failed (/vms/300, VM.Config.Disk)",
		"VM.Config.Memory":        "Permission check failed (/vms/300, VM.Config.Memory)",
		"VM.Config.Network":       "Permission check failed (/vms/300, VM.Config.Network)",
		"VM.Config.Options":       "Permission check failed (/vms/300, VM.Config.Options)",
	}
	simtest.CreatePrivilegesOneFewer(t, pvesim.New, qmPermPrivs, want, "/nodes/pve01/qemu", qmCreateParams(300), "nodes/pve01/qemu-server/300.conf")
}

// VM.Allocate on the pool named by the create's pool parameter is enough;
// without VM.Allocate anywhere, an existing VMID is answered with the 403
// too: create_vm checks permissions before create_and_lock_config's
// check_vmid_unused.
func TestQemuCreateAllocateAlternatives(t *testing.T) {
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 10 * time.Millisecond})
	admin := simtest.NewClient(t, s, "pve01").LabToken()
	admin.Call("POST", "/pools", url.Values{"poolid": {"tenant"}}).Must(t, "create pool")
	others := slices.DeleteFunc(slices.Clone(qmPermPrivs), func(p string) bool { return p == "VM.Allocate" })
	id, secret, err := s.AddToken("pve01", pvesim.TokenSpec{User: "root@pam", Name: "pool", Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	for path, privs := range map[string][]string{"/": others, "/pool/tenant": {"VM.Allocate"}} {
		if err := s.Grant("pve01", path, id, "priv:"+strings.Join(privs, ","), true); err != nil {
			t.Fatal(err)
		}
	}
	c := simtest.NewClient(t, s, "pve01").WithToken(id, secret)
	if r := c.Call("POST", "/nodes/pve01/qemu", qmCreateParams(300)); r.Status != 403 || r.Reason != "Permission check failed" {
		t.Errorf("without pool: %d %q, want 403 %q", r.Status, r.Reason, "Permission check failed")
	}
	p := qmCreateParams(300)
	p.Set("pool", "tenant")
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu", p); st["exitstatus"] != "OK" {
		t.Fatalf("with VM.Allocate on the pool: %v", st)
	}
	// VM 300 is in the pool now, so its ACL reaches /vms/300: ask for 301,
	// which exists (made by root) but is in no pool.
	if st := simtest.MustTask(t, admin, "POST", "/nodes/pve01/qemu", url.Values{"vmid": {"301"}}); st["exitstatus"] != "OK" {
		t.Fatalf("root's create: %v", st)
	}
	if r := c.Call("POST", "/nodes/pve01/qemu", qmCreateParams(301)); r.Status != 403 || r.Reason != "Permission check failed" {
		t.Errorf("existing VMID without VM.Allocate: %d %q, want 403 %q", r.Status, r.Reason, "Permission check failed")
	}
}

// PVE 9's create_vm asks Sys.Console on / when the new VM is to be HA
// managed (qemu-server 9.1.8) and VM.PowerMgmt on it when it is to start
// (9.1.10); PVE 8's (8.4.x) asks neither, and has no ha-managed parameter.
func TestQemuCreateHAManagedAndStartPrivileges(t *testing.T) {
	for _, pve := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", pve), func(t *testing.T) {
			s := simtest.Start(t, pvesim.New, simtest.Opts{Version: pve, TaskDuration: 10 * time.Millisecond})
			id, secret, err := s.AddToken("pve01", pvesim.TokenSpec{User: "root@pam", Name: "vmadmin", Privsep: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Grant("pve01", "/", id, "priv:"+strings.Join(qmPermPrivs, ","), true); err != nil {
				t.Fatal(err)
			}
			c := simtest.NewClient(t, s, "pve01").WithToken(id, secret)
			p := qmCreateParams(310)
			p.Set("start", "1")
			r := c.Call("POST", "/nodes/pve01/qemu", p)
			if pve == 8 {
				if r.Status != 200 {
					t.Errorf("start=1 without VM.PowerMgmt on PVE 8: %d %q, want the create", r.Status, r.Reason)
				}
				if r := c.Call("POST", "/nodes/pve01/qemu", url.Values{"vmid": {"311"}, "ha-managed": {"1"}}); r.Status != 400 {
					t.Errorf("ha-managed on PVE 8: %d %q, want 400 (not in its schema)", r.Status, r.Reason)
				}
				return
			}
			if want := "Permission check failed (/vms/310, VM.PowerMgmt)"; r.Status != 403 || r.Reason != want {
				t.Errorf("start=1 without VM.PowerMgmt: %d %q, want 403 %q", r.Status, r.Reason, want)
			}
			p = qmCreateParams(311)
			p.Set("ha-managed", "1")
			if r := c.Call("POST", "/nodes/pve01/qemu", p); r.Status != 403 || r.Reason != "Permission check failed (/, Sys.Console)" {
				t.Errorf("ha-managed without Sys.Console: %d %q, want 403 %q", r.Status, r.Reason, "Permission check failed (/, Sys.Console)")
			}
			admin := simtest.NewClient(t, s, "pve01").LabToken()
			for _, vmid := range []string{"310", "311"} {
				if r := admin.Call("GET", "/nodes/pve01/qemu/"+vmid+"/config", nil); r.Status != 500 {
					t.Errorf("VM %s after the refused create: %d, want no config (500)", vmid, r.Status)
				}
			}
			if err := s.Grant("pve01", "/", id, "priv:VM.PowerMgmt,Sys.Console", true); err != nil {
				t.Fatal(err)
			}
			p = qmCreateParams(312)
			p.Set("start", "1")
			if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu", p); st["exitstatus"] != "OK" {
				t.Errorf("start=1 with VM.PowerMgmt: %v", st)
			}
		})
	}
}

// create_vm's device checks (qemuserver.CheckCreateDevicePerm): a real serial port, USB or PCI
// device is root's alone; a socket, spice or a mapping needs
// VM.Config.HWType, a mapping also Mapping.Use on its /mapping path; a
// custom CPU model Mapping.Use on /mapping/cpu/<name>. Nothing is created
// when a check fails; root@pam passes them all, its API tokens do not.
func TestQemuCreateDevicePermissions(t *testing.T) {
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 10 * time.Millisecond})
	admin := simtest.NewClient(t, s, "pve01").LabToken()
	id, secret, err := s.AddToken("pve01", pvesim.TokenSpec{User: "root@pam", Name: "dev", Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Grant("pve01", "/", id, "priv:"+strings.Join(append(slices.Clone(qmPermPrivs), "VM.Config.HWType"), ","), true); err != nil {
		t.Fatal(err)
	}
	c := simtest.NewClient(t, s, "pve01").WithToken(id, secret)
	vmid := 320
	create := func(opt, val string) simtest.Resp {
		vmid++
		p := url.Values{"vmid": {fmt.Sprint(vmid)}, opt: {val}}
		return c.Call("POST", "/nodes/pve01/qemu", p)
	}
	for _, tc := range []struct{ opt, val, want string }{
		{"serial0", "/dev/ttyS0", "only root can set 'serial0' config for real devices"},
		{"usb0", "host=1234:5678", "only root can set 'usb0' config for real devices"},
		{"hostpci0", "0000:01:00.0", "only root can set 'hostpci0' config for non-mapped devices"},
		{"usb1", "mapping=stick", "Permission check failed (/mapping/usb/stick, Mapping.Use)"},
		{"hostpci1", "mapping=gpu", "Permission check failed (/mapping/pci/gpu, Mapping.Use)"},
		{"cpu", "custom-fast", "Permission check failed (/mapping/cpu/fast, Mapping.Use)"},
	} {
		if r := create(tc.opt, tc.val); r.Status < 400 || !strings.Contains(r.Reason, tc.want) {
			t.Errorf("%s=%s: %d %q, want a refusal %q", tc.opt, tc.val, r.Status, r.Reason, tc.want)
		}
		if r := admin.Call("GET", fmt.Sprintf("/nodes/pve01/qemu/%d/config", vmid), nil); r.Status != 500 {
			t.Errorf("%s=%s: VM %d exists after the refused create (%d)", tc.opt, tc.val, vmid, r.Status)
		}
	}
	// With Mapping.Use, a mapped device and a socket need only the VM's
	// VM.Config.HWType, which the token has (with the create's privileges).
	if err := s.Grant("pve01", "/mapping", id, "priv:Mapping.Use", true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ opt, val string }{{"serial0", "socket"}, {"usb0", "spice"}, {"usb1", "mapping=stick"}, {"cpu", "custom-fast"}} {
		vmid++
		p := url.Values{"vmid": {fmt.Sprint(vmid)}, tc.opt: {tc.val}}
		if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu", p); st["exitstatus"] != "OK" {
			t.Errorf("%s=%s with Mapping.Use: %v", tc.opt, tc.val, st)
		}
	}
	// Only root@pam itself: its API tokens are other principals
	// ($authuser eq 'root@pam' is false for root@pam!<token>).
	vmid++
	real := url.Values{"vmid": {fmt.Sprint(vmid)}, "serial0": {"/dev/ttyS0"}}
	if r := admin.Call("POST", "/nodes/pve01/qemu", real); r.Status != 500 || !strings.Contains(r.Reason, "only root can set 'serial0'") {
		t.Errorf("root@pam's token, real serial port: %d %q, want 500 only root", r.Status, r.Reason)
	}
	if st := simtest.MustTask(t, simtest.NewClient(t, s, "pve01").Root(), "POST", "/nodes/pve01/qemu", real); st["exitstatus"] != "OK" {
		t.Errorf("root@pam's real serial port: %v", st)
	}
}
