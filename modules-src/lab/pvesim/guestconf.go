package pvesim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pmxcfs"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// A guest's configuration is its file in /etc/pve, nodes/<node>/qemu-server/
// <vmid>.conf (or lxc/), in PVE's format (package guestconf). The file is
// the truth: the API parses it on every read, so a config edited on a lab
// node (or being cloned) is what the API shows.

// qmConf is a parsed config file (package guestconf).
type qmConf = guestconf.Conf

func parseQmConf(raw string) *qmConf { return guestconf.Parse(raw) }

// ---- Where config files live: the node's /etc/pve (ConfigDB) ----

// guestConfPath is the /etc/pve-relative path of a guest's config.
func guestConfPath(node, kind string, vmid int) string {
	return fmt.Sprintf("nodes/%s/%s/%d.conf", node, kind, vmid)
}

// readEtcPve, writeEtcPve and removeEtcPve are the one place guest code
// touches /etc/pve files: the DB's directory, which the lab mounts as every
// member's /etc/pve (etcpve.go), so a config edited on a node is what the
// API reads next.
func (s *Sim) readEtcPve(db *ConfigDB, rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(s.etcPveDir(db.ID), filepath.FromSlash(rel)))
	if err != nil {
		return "", false
	}
	return string(b), true
}

func (s *Sim) writeEtcPve(db *ConfigDB, rel, content string) {
	if err := writeEtcPveFile(s.etcPveDir(db.ID), rel, []byte(content)); err != nil {
		s.log.addError(err)
	}
	db.Serial++
}

func (s *Sim) removeEtcPve(db *ConfigDB, rel string) {
	if err := os.Remove(filepath.Join(s.etcPveDir(db.ID), filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.addError(err)
	}
	db.Serial++
}

// vmEntry is one line of pmxcfs's .vmlist: which node holds which guest.
type vmEntry struct {
	VMID int
	Node string
	Kind string // qemu-server or lxc
}

// vmListLocked is the cluster's .vmlist, sorted by VMID (pmxcfs's scan of
// nodes/<node>/{qemu-server,lxc}).
func (s *Sim) vmListLocked(db *ConfigDB) []vmEntry {
	var out []vmEntry
	for _, c := range pmxcfs.ScanVMConfigs(s.etcPveDir(db.ID)) {
		kind := "qemu-server"
		switch c.Type {
		case "lxc":
			kind = "lxc"
		case "openvz":
			continue
		}
		out = append(out, vmEntry{VMID: int(c.VMID), Node: c.Node, Kind: kind})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VMID < out[j].VMID })
	return out
}

// findVMLocked returns where vmid lives in db's cluster.
func (s *Sim) findVMLocked(db *ConfigDB, vmid int) (vmEntry, bool) {
	for _, e := range s.vmListLocked(db) {
		if e.VMID == vmid {
			return e, true
		}
	}
	return vmEntry{}, false
}

// loadQmConfLocked is load_config: the file on node or PVE's error.
func (s *Sim) loadQmConfLocked(db *ConfigDB, node string, vmid int) (*qmConf, error) {
	return s.loadGuestConfLocked(db, vmKind, node, vmid)
}

// assertOnNode is assert_config_exists_on_node (qemu-server QemuConfig.pm),
// which check_running runs first in most VM calls.
func (s *Sim) assertOnNodeLocked(db *ConfigDB, node string, vmid int) error {
	if _, ok := s.readEtcPve(db, guestConfPath(node, "qemu-server", vmid)); !ok {
		return fmt.Errorf("unable to find configuration file for VM %d on node '%s'", vmid, node)
	}
	return nil
}

func (s *Sim) writeQmConfLocked(db *ConfigDB, node string, vmid int, c *qmConf) {
	dropReusedUnused(c) // write_vm_config
	if d, ok := c.Keys["description"]; ok {
		c.SetDescription(d) // $generate_raw_config: the "#" lines
	}
	s.writeGuestConfLocked(db, vmKind, node, vmid, c)
}

// pveDie is an error worded by PVE (capitals, final dots and all): the API
// answers it as 500 with the text unchanged, a task as its exit status.
var pveDie = pvecommon.Die

// etcPveWritableLocked is what writing rel into a read-only /etc/pve (no
// quorum, C10) fails with: file_set_contents cannot open its temp file
// (pve-common PVE/File.pm).
func (s *Sim) etcPveWritableLocked(db *ConfigDB, rel string) error {
	if s.quorateLocked(db) {
		return nil
	}
	return pveDie("unable to open file '/etc/pve/%s.tmp.%d' - Permission denied", rel, s.st.NextPID+1)
}

// checkLock is AbstractConfig.pm check_lock.
func checkLock(c *qmConf) error {
	if l := c.Lock(); l != "" {
		return fmt.Errorf("VM is locked (%s)", l)
	}
	return nil
}

// ---- property strings (net0, scsi0, …) ----

// propString is a parsed PVE property string, keeping key order.
type propString struct {
	keys []string
	vals map[string]string
}

func parseProps(s, defaultKey string) propString {
	p := propString{vals: map[string]string{}}
	for _, part := range splitComma(s) {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			k, v = defaultKey, part
		}
		if _, dup := p.vals[k]; !dup {
			p.keys = append(p.keys, k)
		}
		p.vals[k] = v
	}
	return p
}

func (p propString) get(k string) string { return p.vals[k] }

func (p *propString) set(k, v string) {
	if _, ok := p.vals[k]; !ok {
		p.keys = append(p.keys, k)
	}
	p.vals[k] = v
}

func (p *propString) del(k string) {
	if _, ok := p.vals[k]; !ok {
		return
	}
	delete(p.vals, k)
	p.keys = slices.DeleteFunc(p.keys, func(x string) bool { return x == k })
}

// print renders first (the default key's value, bare) then the rest sorted,
// as PVE's print_property_string does.
func (p propString) print(first string) string {
	var parts []string
	if v, ok := p.vals[first]; ok {
		parts = append(parts, v)
	}
	rest := slices.Clone(p.keys)
	sort.Strings(rest)
	for _, k := range rest {
		if k == first {
			continue
		}
		parts = append(parts, k+"="+p.vals[k])
	}
	return strings.Join(parts, ",")
}

// ---- NICs ----

var nicModels = []string{"e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551",
	"i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3"}

var netKeyRe = regexp.MustCompile(`^net\d+$`)

func isNetKey(k string) bool { return netKeyRe.MatchString(k) }

// normaliseNet is parse_net + print_net (qemu-server QemuServer/Network.pm):
// "virtio,bridge=vmbr0" or "model=virtio,…" becomes "virtio=<MAC>,bridge=…";
// a NIC given without a MAC gets a new random one — every time, also on an
// update (K16: send the MAC you have to keep it).
func normaliseNet(v string) string {
	p := propString{vals: map[string]string{}}
	var model, mac string
	for _, part := range splitComma(v) {
		k, val, hasEq := strings.Cut(part, "=")
		switch {
		case !hasEq && slices.Contains(nicModels, k):
			model = k
		case hasEq && slices.Contains(nicModels, k):
			model, mac = k, val
		case k == "model":
			model = val
		case k == "macaddr":
			mac = val
		default:
			p.set(k, val)
		}
	}
	if mac == "" {
		mac = randomMAC()
	}
	out := model + "=" + strings.ToUpper(mac)
	if rest := p.print(""); rest != "" {
		out += "," + rest
	}
	return out
}

// netMAC returns a NIC's MAC.
func netMAC(v string) string {
	for _, part := range splitComma(v) {
		k, val, ok := strings.Cut(part, "=")
		if ok && (k == "macaddr" || slices.Contains(nicModels, k)) {
			return val
		}
	}
	return ""
}

// randomMAC is random_ether_addr with PVE's default prefix BC:24:11
// (datacenter.cfg mac_prefix, pve-cluster's default since PVE 8.1).
func randomMAC() string {
	h := strings.ToUpper(randomHex(3))
	return "BC:24:11:" + h[0:2] + ":" + h[2:4] + ":" + h[4:6]
}

// ---- drives ----

var driveKeyRe = regexp.MustCompile(`^(ide|sata|scsi|virtio|efidisk|tpmstate|unused)\d+$`)

func isDriveKey(k string) bool { return driveKeyRe.MatchString(k) }

// drive is a parsed disk option.
type drive struct {
	props propString
}

func parseDrive(v string) drive { return drive{props: parseProps(v, "file")} }

func (d drive) file() string  { return d.props.get("file") }
func (d drive) cdrom() bool   { return d.props.get("media") == "cdrom" }
func (d drive) print() string { return d.props.print("file") }

// cloudinit: a volume named vm-<id>-cloudinit (drive_is_cloudinit).
func (d drive) cloudinit() bool { return strings.Contains(d.file(), "-cloudinit") }

// volumeID splits "store:volname" (storage.ParseVolumeID).
func volumeID(file string) (store, volname string, ok bool) { return storage.ParseVolumeID(file) }

// volOwner returns the VMID a volume name belongs to (storage.Owner).
func volOwner(volname string) int { return storage.Owner(volname) }
