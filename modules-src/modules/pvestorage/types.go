package pvestorage

import "slices"

// storageType is what a pve-storage plugin's options() says about one
// storage type: the keys it takes, which of them are required at creation,
// which are fixed (PVE refuses to change them: "can't change value of fixed
// parameter"), the content types it can hold, and its plugindata()
// 'sensitive-properties' (kept under /etc/pve/priv, see secrets.go). The API schema only has
// the union of all types' keys, so this part is hand-written from
// proxmox/pve-storage src/PVE/Storage/*Plugin.pm (options(), plugindata());
// keys PVE added late (namespace and max-protected-backups on pbs) are a
// reconstruction from the newer plugin sources.
type storageType struct {
	options  []string
	required []string
	fixed    []string
	content  []string
	v8only   []string
	v9only   []string
	// sensitive is plugindata 'sensitive-properties' (pve-storage
	// CIFSPlugin.pm: password; PBSPlugin.pm: encryption-key, master-pubkey,
	// password; every other type here: none).
	sensitive []string
}

var fileContent = []string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import", "none"}

// mountedContent is nfs's and cifs's plugindata content: no "none".
var mountedContent = []string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"}

var storageTypes = map[string]storageType{
	"dir": {
		options: []string{"path", "content-dirs", "nodes", "shared", "disable", "prune-backups", "max-protected-backups",
			"content", "format", "mkdir", "create-base-path", "create-subdirs", "is_mountpoint", "bwlimit", "preallocation"},
		required: []string{"path"},
		fixed:    []string{"path", "snapshot-as-volume-chain"},
		content:  fileContent,
		v8only:   []string{"maxfiles"},
		v9only:   []string{"snapshot-as-volume-chain"},
	},
	"nfs": {
		options: []string{"path", "server", "export", "options", "content-dirs", "nodes", "disable", "prune-backups",
			"max-protected-backups", "content", "format", "mkdir", "create-base-path", "create-subdirs", "bwlimit", "preallocation"},
		// path defaults to /mnt/pve/<storage> (check_config).
		required: []string{"server", "export"},
		fixed:    []string{"path", "server", "export", "snapshot-as-volume-chain"},
		content:  mountedContent,
		v8only:   []string{"maxfiles"},
		v9only:   []string{"snapshot-as-volume-chain"},
	},
	"cifs": {
		options: []string{"path", "content-dirs", "server", "share", "subdir", "nodes", "disable", "prune-backups",
			"max-protected-backups", "content", "format", "username", "password", "domain", "smbversion", "mkdir",
			"create-base-path", "create-subdirs", "bwlimit", "preallocation", "options"},
		required:  []string{"server", "share"},
		fixed:     []string{"path", "server", "share", "snapshot-as-volume-chain"},
		content:   mountedContent,
		v8only:    []string{"maxfiles"},
		v9only:    []string{"snapshot-as-volume-chain"},
		sensitive: []string{"password"},
	},
	"zfspool": {
		options:  []string{"pool", "blocksize", "sparse", "nodes", "disable", "content", "bwlimit", "mountpoint"},
		required: []string{"pool"},
		fixed:    []string{"pool"},
		content:  []string{"images", "rootdir"},
	},
	"lvmthin": {
		options:  []string{"thinpool", "vgname", "nodes", "disable", "content", "bwlimit"},
		required: []string{"thinpool", "vgname"},
		fixed:    []string{"thinpool", "vgname"},
		content:  []string{"images", "rootdir"},
	},
	"lvm": {
		options:  []string{"vgname", "base", "saferemove", "saferemove_throughput", "shared", "tagged_only", "nodes", "disable", "content", "bwlimit"},
		required: []string{"vgname"},
		fixed:    []string{"vgname", "base"}, // LVMPlugin.pm: snapshot-as-volume-chain is optional, not fixed
		content:  []string{"images", "rootdir"},
		v9only:   []string{"snapshot-as-volume-chain", "saferemove-stepsize"},
	},
	"pbs": {
		options: []string{"server", "datastore", "namespace", "port", "nodes", "disable", "content", "username", "password",
			"encryption-key", "master-pubkey", "prune-backups", "max-protected-backups", "fingerprint"},
		required:  []string{"server", "datastore"},
		fixed:     []string{"server", "datastore"},
		content:   []string{"backup", "none"},
		v8only:    []string{"maxfiles"},
		sensitive: []string{"encryption-key", "master-pubkey", "password"},
	},
}

// typeNames is the `type` choices, in documentation order.
var typeNames = []string{"zfspool", "dir", "nfs", "cifs", "lvmthin", "lvm", "pbs"}

// secretKeys are the sensitive properties that are secrets (master-pubkey
// is a public key): no_log options, never in results, diffs or pvesh argv.
var secretKeys = []string{"password", "encryption-key"}

func (t storageType) allows(key string, version int) bool {
	if slices.Contains(t.options, key) {
		return true
	}
	if version >= 9 {
		return slices.Contains(t.v9only, key)
	}
	return slices.Contains(t.v8only, key)
}

// allKeys is every key of every supported type, any version.
func allKeys() []string {
	var keys []string
	for _, t := range storageTypes {
		for _, list := range [][]string{t.options, t.v8only, t.v9only} {
			for _, k := range list {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
	}
	slices.Sort(keys)
	return keys
}
