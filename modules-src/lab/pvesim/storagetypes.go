package pvesim

import "github.com/gopve/proxmox/modules-src/pveapi/storagetype"

// storageType is what one pve-storage plugin declares (options(),
// plugindata(), check_config's defaults), from pveapi/storagetype: the
// table pve_storage and the guest modules read too, checked there against
// proxmox/pve-storage's plugins at 8.3.6 and 9.1.
type storageType = storagetype.Type

// simulatedStorageType is the type named typ when the lab simulates it:
// the types whose options() the table holds.
func simulatedStorageType(typ string) (storageType, bool) {
	t, ok := storagetype.Lookup(typ)
	return t, ok && t.Managed()
}
