package pmxcfs

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Guest configurations in /etc/pve (memdb.c path_contain_vm_config):
// nodes/<node>/{qemu-server,lxc,openvz}/<vmid>.conf, vmid without leading
// zero. pmxcfs keeps a VM list from them (.vmlist) and refuses a second
// configuration of the same VMID anywhere in the cluster (EEXIST).

// VMConfig is one guest configuration file.
type VMConfig struct {
	VMID uint32
	Node string
	Type string // qemu, lxc or openvz
	Rel  string // path relative to /etc/pve
}

var vmDirTypes = map[string]string{"qemu-server": "qemu", "lxc": "lxc", "openvz": "openvz"}

// ParseVMConfigPath tells whether rel is a guest configuration path.
func ParseVMConfigPath(rel string) (VMConfig, bool) {
	parts := strings.Split(rel, "/")
	if len(parts) != 4 || parts[0] != "nodes" || !validNodeName(parts[1]) {
		return VMConfig{}, false
	}
	typ, ok := vmDirTypes[parts[2]]
	name, isConf := strings.CutSuffix(parts[3], ".conf")
	if !ok || !isConf || name == "" || name[0] < '1' || name[0] > '9' {
		return VMConfig{}, false
	}
	id, err := strconv.ParseUint(name, 10, 32)
	if err != nil {
		return VMConfig{}, false
	}
	return VMConfig{VMID: uint32(id), Node: parts[1], Type: typ, Rel: rel}, true
}

// validNodeName is memdb.c's LDH rule.
func validNodeName(n string) bool {
	if n == "" {
		return false
	}
	for i, c := range n {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' && i != 0 && i != len(n)-1
		if !ok {
			return false
		}
	}
	return true
}

// ScanVMConfigs lists the guest configurations under an /etc/pve directory,
// by VMID.
func ScanVMConfigs(dir string) []VMConfig {
	var out []VMConfig
	nodes, _ := os.ReadDir(filepath.Join(dir, "nodes"))
	for _, n := range nodes {
		for sub := range vmDirTypes {
			files, _ := os.ReadDir(filepath.Join(dir, "nodes", n.Name(), sub))
			for _, f := range files {
				if vm, ok := ParseVMConfigPath("nodes/" + n.Name() + "/" + sub + "/" + f.Name()); ok && f.Type().IsRegular() {
					out = append(out, vm)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].VMID < out[j].VMID || out[i].VMID == out[j].VMID && out[i].Rel < out[j].Rel
	})
	return out
}

// otherVMConfig is vmlist_different_vm_exists: another node or guest type
// already has a configuration for vm's VMID.
func otherVMConfig(dir string, vm VMConfig) bool {
	for _, o := range ScanVMConfigs(dir) {
		if o.VMID == vm.VMID && (o.Node != vm.Node || o.Type != vm.Type) {
			return true
		}
	}
	return false
}
