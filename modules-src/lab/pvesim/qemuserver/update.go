package qemuserver

import (
	"fmt"
	"maps"
	"slices"
)

// ConfigMeta are the PUT/POST /nodes/{node}/qemu/{vmid}/config parameters
// that are not config options.
var ConfigMeta = []string{"node", "vmid", "digest", "delete", "revert", "force", "skiplock", "background_delay",
	"skip_cloud_init", "import-working-storage"}

// Update is one config update's changes as $update_vm_api reads them
// before any lock (src/PVE/API2/Qemu.pm).
type Update struct {
	// Set are the options to set, as they will be written: cdrom as
	// ide2, a NIC with its MAC, cipassword hashed.
	Set map[string]string
	// Deletes and Revert are the delete and revert lists, delete's cdrom
	// as ide2.
	Deletes, Revert []string
	// LogParams is the task log's "-<opt> <value>" list, options sorted,
	// as sent (cipassword as <hidden>).
	LogParams []string
}

// PrepareUpdate is $update_vm_api's parameter part: set holds the request's
// options (ConfigMeta left out), deletes and revert its split lists. A
// cipassword is hashed unless it is a hash already (encrypt_pw, with
// newSalt()); cdrom is ide2 as a CD-ROM; sshkeys must validate; an option
// both set and deleted is refused; a NIC without a MAC gets newMAC() (K16).
// A request without any change is "no options specified".
func PrepareUpdate(set map[string]string, deletes, revert []string, newSalt, newMAC func() string) (*Update, error) {
	u := &Update{Set: maps.Clone(set), Revert: revert}
	for _, k := range slices.Sorted(maps.Keys(u.Set)) {
		v := u.Set[k]
		if k == "cipassword" {
			v = "<hidden>"
		}
		u.LogParams = append(u.LogParams, "-"+k, v)
	}
	if pw, ok := u.Set["cipassword"]; ok && !IsCrypted(pw) {
		u.Set["cipassword"] = CryptPassword(pw, newSalt())
	}
	if k, ok := u.Set["cdrom"]; ok {
		u.Set["ide2"] = k + ",media=cdrom"
		delete(u.Set, "cdrom")
	}
	if keys, ok := u.Set["sshkeys"]; ok {
		if err := CheckSSHKeys(keys); err != nil {
			return nil, err
		}
	}
	for _, k := range deletes {
		if k == "cdrom" {
			k = "ide2"
		}
		if _, ok := u.Set[k]; ok {
			return nil, &ParamError{Param: "delete", Msg: fmt.Sprintf("you can't use '-%s' and -delete %s' at the same time", k, k)}
		}
		u.Deletes = append(u.Deletes, k)
	}
	if len(u.Set) == 0 && len(u.Deletes) == 0 && len(u.Revert) == 0 {
		return nil, fmt.Errorf("no options specified")
	}
	for k, v := range u.Set {
		if IsNetKey(k) {
			u.Set[k] = NormaliseNet(v, newMAC)
		}
	}
	return u, nil
}
