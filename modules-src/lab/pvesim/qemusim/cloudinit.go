package qemusim

import (
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
)

// Cloud-init as qemu-server handles it (src/PVE/API2/Qemu.pm create_vm and
// $update_vm_api, QemuServer/Cloudinit.pm): the keys' formats are the
// schema's (pveschema: ipconfigN is pve-qm-ipconfig, sshkeys must be
// URL-encoded, cicustom names volumes); sshkeys is stored as sent, still
// encoded, after its decoded lines passed `ssh-keygen -l` (K12); the drive
// is vm-<vmid>-cloudinit with media=cdrom (create_disks); the custom
// snippets are read when the VM starts (generate_cloudinit_config →
// read_cloudinit_snippets_file), so a missing one fails the start (S4).
// The values' rules (sshkeys, cipassword) are qemuserver's.

// checkCloudinitSnippetsLocked is get_custom_cloudinit_files at start: each
// cicustom volume must be a snippet that exists on the node.
func (s *backend) checkCloudinitSnippetsLocked(node string, c *guestconf.Conf) error {
	if !qemuserver.HasCloudinitDrive(c.Keys) || c.Keys["cicustom"] == "" {
		return nil
	}
	files := pvecommon.ParseProps(c.Keys["cicustom"], "")
	for _, kind := range []string{"network", "user", "meta", "vendor"} {
		volid := files.Get(kind)
		if volid == "" {
			continue
		}
		r, err := s.ParseVolRef(node, volid)
		if err != nil {
			return err
		}
		if r.Type != "snippets" {
			return pvecommon.Die("%s is not in the snippets directory", volid)
		}
		ok, err := s.VolumeExistsLocked(node, volid)
		if err != nil {
			return err
		}
		if !ok {
			return pvecommon.Die("can't find file '%s'", volid) // abs_filesystem_path
		}
	}
	return nil
}
