package pvesim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// A third-party client gets from the lab the answers a real cluster gives
// for guests: go-proxmox v0.8.2's typed calls create a VM, read it (status
// and config decode into its structs), make it a template, clone it with an
// id from NextID (a string on the wire), change the clone's config in both
// the task and the synchronous form, resize it and start it, waiting on
// every task at the node its UPID names (K3).
func TestGoProxmoxTypedVMCalls(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{TaskDuration: 30 * time.Millisecond})
	n := mustNode(t, s, "pve01")
	ctx := context.Background()
	id, secret := s.LabToken()
	c := proxmox.NewClient(n.URL, proxmox.WithHTTPClient(pinnedHTTPClient(n.Fingerprint)), proxmox.WithAPIToken(id, secret))
	node, err := c.Node(ctx, "pve01")
	if err != nil {
		t.Fatal(err)
	}
	cores := func(vmc *proxmox.VirtualMachineConfig) int {
		if vmc.Cores == nil {
			return 0
		}
		return *vmc.Cores
	}
	wait := func(what string, task *proxmox.Task, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := task.WaitFor(ctx, 5); err != nil {
			t.Fatalf("%s: wait: %v", what, err)
		}
		if !task.IsSuccessful {
			t.Fatalf("%s: task %s ended %q", what, task.UPID, task.ExitStatus)
		}
	}
	task, err := node.NewVirtualMachine(ctx, 9000,
		proxmox.VirtualMachineOption{Name: "name", Value: "tmpl"},
		proxmox.VirtualMachineOption{Name: "cores", Value: 2},
		proxmox.VirtualMachineOption{Name: "memory", Value: 2048},
		proxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=vmbr0"},
		proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:8"},
		proxmox.VirtualMachineOption{Name: "ide2", Value: "local-lvm:cloudinit"},
		proxmox.VirtualMachineOption{Name: "agent", Value: "enabled=1"},
		proxmox.VirtualMachineOption{Name: "tags", Value: "lab"},
		proxmox.VirtualMachineOption{Name: "onboot", Value: 1})
	wait("create", task, err)
	vm, err := node.VirtualMachine(ctx, 9000)
	if err != nil {
		t.Fatalf("go-proxmox VirtualMachine: %v", err)
	}
	if vm.Name != "tmpl" || cores(vm.VirtualMachineConfig) != 2 || !strings.HasPrefix(vm.VirtualMachineConfig.Nets["net0"], "virtio=BC:24:11:") ||
		vm.VirtualMachineConfig.SCSIs["scsi0"] != "local-lvm:vm-9000-disk-0,size=8G" || vm.Status != "stopped" {
		t.Errorf("go-proxmox VM %+v config %+v", vm, vm.VirtualMachineConfig)
	}
	task, err = vm.ConvertToTemplate(ctx)
	wait("template", task, err)

	newid, task, err := vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{Name: "web1"})
	wait("clone", task, err)
	if newid != 100 || task.Node != "pve01" || task.ID != "9000" || task.Type != "qmclone" {
		t.Errorf("clone: newid %d, task %+v", newid, task)
	}
	clone, err := node.VirtualMachine(ctx, newid)
	if err != nil {
		t.Fatalf("read clone: %v", err)
	}
	if clone.Name != "web1" || clone.VirtualMachineConfig.SCSIs["scsi0"] != "local-lvm:base-9000-disk-0/vm-100-disk-0,size=8G" {
		t.Errorf("clone %+v", clone.VirtualMachineConfig)
	}
	task, err = clone.Config(ctx, proxmox.VirtualMachineOption{Name: "cores", Value: 4})
	wait("config", task, err)
	if err := clone.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "memory", Value: 4096}); err != nil {
		t.Fatalf("ConfigSync: %v", err)
	}
	task, err = clone.ResizeDisk(ctx, "scsi0", "+2G")
	wait("resize", task, err)
	task, err = clone.Start(ctx)
	wait("start", task, err)
	if err := clone.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if !clone.IsRunning() || cores(clone.VirtualMachineConfig) != 4 || fmt.Sprint(clone.VirtualMachineConfig.Memory) != "4096" ||
		clone.VirtualMachineConfig.SCSIs["scsi0"] != "local-lvm:base-9000-disk-0/vm-100-disk-0,size=10G" {
		t.Errorf("after config, resize and start: running %v, %+v", clone.IsRunning(), clone.VirtualMachineConfig)
	}
	vms, err := node.VirtualMachines(ctx)
	if err != nil || len(vms) != 2 {
		t.Fatalf("VirtualMachines: %v %d", err, len(vms))
	}
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cl.Resources(ctx, "vm")
	if err != nil || len(rs) != 2 {
		t.Fatalf("cluster resources: %v %+v", err, rs)
	}
}
