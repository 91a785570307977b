package pvecontainer

import (
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// A restore's rules on option values (create_vm with restore=1,
// src/PVE/API2/LXC.pm, and src/PVE/LXC/Create.pm). The archive, the
// volumes and the task are pvesim's (pvesim/lxcsim/restore.go).

// RestoreStorageOnly is create_vm's $storage_only_mode: a restore whose
// request names no rootfs and no mpN re-creates the archive's mount
// points (RestoreMountPoints) instead of the request's.
func RestoreStorageOnly(params map[string]string) bool {
	for k := range params {
		if IsVolumeKey(k) {
			return false
		}
	}
	return true
}

// RestoreMountPoints is create_vm's storage-only mode (src/PVE/API2/
// LXC.pm): the archive's rootfs and mpN (orig, its recovered config), each
// a new volume "storage:<GiB>" of its recorded size, the other options
// kept. The archive must have a rootfs; a rootfs that is a bind or device
// mount must be given by hand, a volume without a size cannot be made.
// Reconstruction and not simulated: an mpN bind or device mount (root
// may restore one in PVE) is refused, and PVE's message names the
// rootfs's mount type where the lab says "bind" for both.
func RestoreMountPoints(orig map[string]string, storage string) (map[string]string, error) {
	if _, ok := orig["rootfs"]; !ok {
		return nil, pvecommon.Die("rootfs configuration could not be recovered, please check and specify manually!")
	}
	out := map[string]string{}
	for _, k := range VolumeKeys(orig) {
		mp := ParseMountPoint(orig[k])
		if strings.HasPrefix(mp.Volume(), "/") {
			if k == "rootfs" {
				return nil, pvecommon.Die("restoring rootfs to bind mount is only possible by specifying -rootfs manually!")
			}
			return nil, pvecommon.Die("restoring '%s' (a bind or device mount) is not simulated by the lab", k)
		}
		n, ok := pvecommon.ParseSize(mp.Get("size"))
		if !ok {
			return nil, pvecommon.Die("unable to detect disk size - please specify %s (size)", k)
		}
		mp.Del("size")
		mp.Set("volume", storage+":"+strconv.FormatFloat(float64(n)/(1<<30), 'f', -1, 64))
		out[k] = mp.Print()
	}
	return out, nil
}

// MergeRestored is sanitize_and_merge_config (src/PVE/LXC/Create.pm):
// the archive's options (orig) fill in what the request (keys) does not
// give — never digest, rootfs, snapshots, unprivileged, parent, template,
// an mpN or an unusedN; a restricted caller (not root@pam) restoring an
// unprivileged CT's archive as privileged does not get its features; with
// unique each of the archive's NICs takes newMAC(), over the request's.
// It returns the warnings PVE prints. Not simulated: the raw lxc.* keys
// (the lab's config parser keeps none) and the check_bridge_access on the
// archive's NICs.
func MergeRestored(keys, orig map[string]string, restricted, unique bool, newMAC func() string) (warnings []string) {
	for k, v := range orig {
		switch {
		case k == "digest", k == "rootfs", k == "snapshots", k == "unprivileged", k == "parent", k == "template",
			IsVolumeKey(k), strings.HasPrefix(k, "unused"):
			continue
		case restricted && k == "features" && keys["unprivileged"] != "1" && orig["unprivileged"] == "1":
			warnings = append(warnings, "changing from unprivileged to privileged, skipping features")
			continue
		case unique && netKeyRe.MatchString(k):
			p := pvecommon.ParseProps(v, "")
			p.Del("hwaddr")
			keys[k] = NormaliseNet(p.Print(""), newMAC)
			continue
		}
		if _, ok := keys[k]; !ok {
			keys[k] = v
		}
	}
	return warnings
}
