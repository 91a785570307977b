package pvesim

// storageType is what one pve-storage plugin declares: options() (which
// keys it takes; a key without `optional` is required at creation, a
// `fixed` one can never change), plugindata() (content types, their
// default, sensitive-properties) and its check_config defaults. Read from
// proxmox/pve-storage src/PVE/Storage/<Type>Plugin.pm, at the PVE 9 head
// (9.1.x) and at 8.3.6 for PVE 8, independently of the module's own table.
type storageType struct {
	options  []string // every key options() lists, both versions
	required []string // not optional
	fixed    []string
	content  []string // plugindata content->[0]
	// sensitive is plugindata 'sensitive-properties': extracted from the
	// request before check_config, never in storage.cfg, handed to the
	// plugin's on_add_hook/on_update_hook (API2/Storage/Config.pm).
	sensitive []string
	// defaultPath: check_config sets path to /mnt/pve/<storeid> on create
	// when none is given (NFSPlugin.pm, CIFSPlugin.pm check_config).
	defaultPath bool
	// shared: the type is in Plugin.pm @SHARED_STORAGE (iscsi, nfs, cifs,
	// rbd, cephfs, iscsidirect, zfs, drbd, pbs): parse_config sets shared.
	shared bool
	v9only []string // in options() of 9.x, not 8.3.6
	v8only []string // in options() of 8.3.6, not 9.x (maxfiles)
}

var storageTypes = map[string]storageType{
	// DirPlugin.pm
	"dir": {
		options: []string{"path", "content-dirs", "nodes", "shared", "disable", "prune-backups", "max-protected-backups",
			"content", "format", "mkdir", "create-base-path", "create-subdirs", "is_mountpoint", "bwlimit", "preallocation"},
		required: []string{"path"},
		fixed:    []string{"path", "snapshot-as-volume-chain"},
		content:  []string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "none", "import"},
		v9only:   []string{"snapshot-as-volume-chain"},
		v8only:   []string{"maxfiles"},
	},
	// NFSPlugin.pm: path is not optional but check_config defaults it;
	// no "none" content.
	"nfs": {
		options: []string{"path", "content-dirs", "server", "export", "nodes", "disable", "prune-backups",
			"max-protected-backups", "options", "content", "format", "mkdir", "create-base-path", "create-subdirs", "bwlimit", "preallocation"},
		required:    []string{"path", "server", "export"},
		fixed:       []string{"path", "server", "export", "snapshot-as-volume-chain"},
		content:     []string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"},
		defaultPath: true,
		shared:      true,
		v9only:      []string{"snapshot-as-volume-chain"},
		v8only:      []string{"maxfiles"},
	},
	// CIFSPlugin.pm: password is sensitive (priv/storage/<id>.pw).
	"cifs": {
		options: []string{"path", "content-dirs", "server", "share", "subdir", "nodes", "disable", "prune-backups",
			"max-protected-backups", "content", "format", "username", "password", "domain", "smbversion", "mkdir",
			"create-base-path", "create-subdirs", "bwlimit", "preallocation", "options"},
		required:    []string{"path", "server", "share"},
		fixed:       []string{"path", "server", "share", "snapshot-as-volume-chain"},
		content:     []string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"},
		sensitive:   []string{"password"},
		defaultPath: true,
		shared:      true,
		v9only:      []string{"snapshot-as-volume-chain"},
		v8only:      []string{"maxfiles"},
	},
	// ZFSPoolPlugin.pm
	"zfspool": {
		options:  []string{"pool", "blocksize", "sparse", "nodes", "disable", "content", "bwlimit", "mountpoint"},
		required: []string{"pool"},
		fixed:    []string{"pool"},
		content:  []string{"images", "rootdir"},
	},
	// LvmThinPlugin.pm
	"lvmthin": {
		options:  []string{"thinpool", "vgname", "nodes", "disable", "content", "bwlimit"},
		required: []string{"thinpool", "vgname"},
		fixed:    []string{"thinpool", "vgname"},
		content:  []string{"images", "rootdir"},
	},
	// LVMPlugin.pm: base is fixed but optional; snapshot-as-volume-chain is
	// optional and, unlike on dir/nfs/cifs, not fixed.
	"lvm": {
		options:  []string{"vgname", "nodes", "shared", "disable", "saferemove", "saferemove_throughput", "content", "base", "tagged_only", "bwlimit"},
		required: []string{"vgname"},
		fixed:    []string{"vgname", "base"},
		content:  []string{"images", "rootdir"},
		v9only:   []string{"saferemove-stepsize", "snapshot-as-volume-chain"},
	},
	// PBSPlugin.pm: password, encryption-key and master-pubkey are
	// sensitive; storage.cfg keeps the key's fingerprint and a
	// "master-pubkey 1" marker (on_add_hook).
	"pbs": {
		options: []string{"server", "datastore", "namespace", "port", "nodes", "disable", "content", "username", "password",
			"encryption-key", "master-pubkey", "prune-backups", "max-protected-backups", "fingerprint"},
		required:  []string{"server", "datastore"},
		fixed:     []string{"server", "datastore"},
		content:   []string{"backup", "none"},
		sensitive: []string{"encryption-key", "master-pubkey", "password"},
		shared:    true,
		v8only:    []string{"maxfiles"},
	},
}

func (t storageType) allows(key string, version int) bool {
	for _, list := range [][]string{t.options, t.versionOnly(version)} {
		for _, k := range list {
			if k == key {
				return true
			}
		}
	}
	return false
}

func (t storageType) versionOnly(version int) []string {
	if version >= 9 {
		return t.v9only
	}
	return t.v8only
}
