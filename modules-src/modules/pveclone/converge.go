package pveclone

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/gopve/proxmox/modules-src/modules/pveclone/options"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// settingsPlan is what the config stage writes: one config update (all
// keys at once, guarded by the digest of the read), the disks to grow, and
// the config as it will read afterwards.
type settingsPlan struct {
	set      map[string]string
	alloc    bool // a new disk is allocated: POST …/config (a task)
	resizes  []resize
	after    map[string]string
	warnings []string
}

type resize struct {
	disk     string
	from, to int64
}

func (p settingsPlan) empty() bool { return len(p.set) == 0 && len(p.resizes) == 0 }

// defaults are what qemu-server uses for a key absent from the config
// (PVE/QemuServer.pm $confdesc defaults), so asking for the default on a
// VM without the key is no change.
var defaults = map[string]string{"cores": "1", "sockets": "1", "numa": "0", "onboot": "0", "memory": "512", "agent": "0"}

var classicBridge = regexp.MustCompile(`^vmbr\d+$`)

// planSettings compares the task's settings with cur (the config after its
// pending changes) and plans the difference. created says the VM was made
// by this run: cipassword, which PVE shows masked, is then set; on an
// existing VM only when none is set.
func planSettings(cur qemu.Config, w *options.Want, created bool) (settingsPlan, error) {
	p := settingsPlan{set: map[string]string{}, after: maps.Clone(cur.Values)}
	if p.after == nil {
		p.after = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(w.Scalars)) {
		want := w.Scalars[k]
		have, present := cur.Values[k]
		if !present {
			have = defaults[k]
		}
		if k == "cipassword" {
			if created || !present {
				p.set[k] = want
			}
			continue
		}
		if k == "name" && present {
			continue // the name is the ownership check's, never rewritten
		}
		same, err := sameScalar(k, have, want)
		if err != nil {
			return p, fmt.Errorf("%s: %w", options.Of(k), err)
		}
		if !same {
			p.set[k] = want
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.Nets)) {
		nw := w.Nets[k]
		var cn qemu.Net
		curStr, present := cur.Values[k]
		if present {
			var err error
			if cn, err = qemu.ParseNet(k, curStr); err != nil {
				return p, fmt.Errorf("nets.%s: the VM's NIC does not parse: %w", k, err)
			}
		}
		merged := nw.Apply(cn) // the MAC stays (K16)
		s, err := merged.Render()
		if err != nil {
			return p, fmt.Errorf("nets.%s: %w", k, err)
		}
		if merged.Firewall != nil && *merged.Firewall && classicBridge.MatchString(merged.Bridge) {
			p.warnings = append(p.warnings, fmt.Sprintf("nets.%s: firewall=1 on the classic bridge %s: hairpin-routed return traffic is dropped (ctstate INVALID, K8)", k, merged.Bridge))
		}
		if present {
			if old, err := cn.Render(); err == nil && old == s {
				continue
			}
		}
		p.set[k] = s
	}
	for _, k := range slices.Sorted(maps.Keys(w.IPConfig)) {
		ic := w.IPConfig[k]
		if curStr, ok := cur.Values[k]; ok {
			if have, err := qemu.ParseIPConfig(k, curStr); err == nil && have.IP == ic.IP && have.GW == ic.GW && have.IP6 == ic.IP6 && have.GW6 == ic.GW6 {
				continue
			}
		}
		s, err := ic.Render()
		if err != nil {
			return p, fmt.Errorf("ipconfig.%s: %w", k, err)
		}
		p.set[k] = s
	}
	if err := p.planDisks(cur, w); err != nil {
		return p, err
	}
	for k, v := range p.set {
		p.after[k] = v
	}
	return p, nil
}

// sameScalar compares a setting by meaning: tags as sets, sshkeys
// decoded (K12), agent and memory as parsed, startup key by key.
func sameScalar(key, have, want string) (bool, error) {
	switch key {
	case "tags":
		return slices.Equal(tagSet(have), tagSet(want)), nil
	case "sshkeys":
		return slices.Equal(qemu.DecodeSSHKeys(have), qemu.DecodeSSHKeys(want)), nil
	case "agent":
		h, err1 := qemu.ParseAgent(orDefault(have, "0"))
		wa, err2 := qemu.ParseAgent(want)
		if err1 != nil || err2 != nil {
			return have == want, nil
		}
		hs, _ := h.Render()
		ws, _ := wa.Render()
		return hs == ws, nil
	case "memory":
		return strings.TrimPrefix(have, "current=") == strings.TrimPrefix(want, "current="), nil
	case "startup", "boot":
		return slices.Equal(sortedParts(have), sortedParts(want)), nil
	case "description":
		// parse_vm_config strips trailing white space ($finish_description):
		// a YAML block scalar's final newline is never read back.
		return strings.TrimRightFunc(have, unicode.IsSpace) == strings.TrimRightFunc(want, unicode.IsSpace), nil
	case "numa", "onboot":
		hb, _ := strconv.ParseBool(orDefault(have, "0"))
		wb, _ := strconv.ParseBool(want)
		return hb == wb, nil
	}
	return have == want, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func tagSet(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
	slices.Sort(f)
	return slices.Compact(f)
}

func sortedParts(s string) []string {
	f := strings.Split(s, ",")
	slices.Sort(f)
	return f
}

// planDisks: an existing disk grows to its minimum size, never shrinks
// (K11), keeps its volume (K16) and merges the given drive options; a
// missing one is allocated (a CD-ROM gets its ISO).
func (p *settingsPlan) planDisks(cur qemu.Config, w *options.Want) error {
	for _, k := range slices.Sorted(maps.Keys(w.Disks)) {
		if err := p.planDisk(cur, w, k); err != nil {
			return err
		}
	}
	return nil
}

// planDisk plans wanted disk k: a new drive where the VM has none (or a
// cloud-init drive in place of a CD-ROM), else the existing one's options
// and size.
func (p *settingsPlan) planDisk(cur qemu.Config, w *options.Want, k string) error {
	dw := w.Disks[k]
	ciStore, wantCI := qemu.CloudInitStore(dw.File)
	if wantCI {
		if at := cloudInitElsewhere(cur, w, k); at != "" {
			// create_disks: "$ds - cloud-init drive is already attached at '$ci_key'"
			return fmt.Errorf("%s: %s - cloud-init drive is already attached at '%s' (a VM has one cloud-init drive)", options.Of(k), k, at)
		}
	}
	curStr, present := cur.Values[k]
	if !present {
		return p.addDrive(k, dw, dw.File == "" || wantCI) // PVE allocates a volume: the POST (task) variant
	}
	d, err := qemu.ParseDrive(k, curStr)
	if err != nil {
		return fmt.Errorf("%s: the VM's disk does not parse: %w", options.Of(k), err)
	}
	if wantCI && d.IsCloudInit() {
		// A cloud-init drive exists or not (issue 23 §7): "storage:cloudinit"
		// asks for one on that storage, which a drive named
		// vm-<vmid>-cloudinit there is. Sending it again would make PVE
		// allocate the same name a second time and fail (ZFS: "dataset
		// already exists"), so only its storage is compared.
		if have, _, _ := strings.Cut(d.File, ":"); have != ciStore {
			return fmt.Errorf("%s: the VM's cloud-init drive %s is on storage '%s', not '%s'; this module does not move it (ask for %s:cloudinit; to have it on '%s', remove the drive in PVE, then run again)",
				options.Of(k), d.File, have, ciStore, have, ciStore)
		}
		return nil
	}
	if wantCI && d.IsCDROM() {
		// A CD-ROM medium (or none) gives way to a new cloud-init drive.
		return p.addDrive(k, dw, true)
	}
	if err := p.planDriveOptions(k, curStr, d, dw); err != nil {
		return err
	}
	p.planResize(k, d, dw)
	return nil
}

// addDrive sets new drive k; alloc says PVE allocates a volume for it.
func (p *settingsPlan) addDrive(k string, dw options.Disk, alloc bool) error {
	s, err := dw.DriveString(k)
	if err != nil {
		return err
	}
	p.set[k] = s
	if alloc {
		p.alloc = true
	}
	return nil
}

// planDriveOptions sets existing drive k (d, stored as curStr) again when
// a wanted option or a CD-ROM's medium differs; a disk's volume is never
// replaced.
func (p *settingsPlan) planDriveOptions(k, curStr string, d qemu.Drive, dw options.Disk) error {
	if dw.File != "" && d.File != dw.File {
		if !d.IsCDROM() {
			return fmt.Errorf("%s: %s holds volume %s; this module never replaces a disk's volume (K16)", options.Of(k), k, d.File)
		}
		d.File = dw.File // a CD-ROM's medium, not data
	}
	props, err := pveformat.Parse(curStr, pveformat.Shape{DefaultKey: "file"})
	if err != nil {
		return fmt.Errorf("%s: %w", options.Of(k), err)
	}
	changed := d.File != props.Map()["file"]
	props.Set("file", d.File)
	for _, ok := range slices.Sorted(maps.Keys(dw.Opts)) {
		if ok == "format" && volumeFormat(d.File) == dw.Opts[ok] {
			continue // create_disks drops the key once the volume has that format
		}
		if v, has := props.Get(ok); !has || v != dw.Opts[ok] {
			props.Set(ok, dw.Opts[ok])
			changed = true
		}
	}
	if changed {
		s, err := pveformat.Print(props, pveformat.Shape{DefaultKey: "file"})
		if err != nil {
			return fmt.Errorf("%s: %w", options.Of(k), err)
		}
		p.set[k] = s
	}
	return nil
}

// planResize grows disk k to the wanted size; a larger disk only warns.
func (p *settingsPlan) planResize(k string, d qemu.Drive, dw options.Disk) {
	switch {
	case dw.Size == 0 || d.IsCDROM():
	case d.Size < dw.Size:
		p.resizes = append(p.resizes, resize{disk: k, from: d.Size, to: dw.Size})
	case d.Size > dw.Size:
		p.warnings = append(p.warnings, fmt.Sprintf("%s: the disk is %s, larger than the %s asked; disks are never shrunk (K11)", options.Of(k), pveformat.FormatSize(d.Size), pveformat.FormatSize(dw.Size)))
	}
}

// cloudInitElsewhere is has_cloudinit($conf, $ds) over the config and the
// task's other disks: the key of a cloud-init drive other than key, or "".
func cloudInitElsewhere(cur qemu.Config, w *options.Want, key string) string {
	for _, k := range slices.Sorted(maps.Keys(cur.Values)) {
		if k == key || !qemu.IsDisk(k) {
			continue
		}
		if d, err := qemu.ParseDrive(k, cur.Values[k]); err == nil && d.IsCloudInit() {
			return k
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.Disks)) {
		if _, ci := qemu.CloudInitStore(w.Disks[k].File); ci && k < key {
			return k
		}
	}
	return ""
}

// afterResize records the grown sizes in the predicted config.
func (p *settingsPlan) afterResize() {
	for _, r := range p.resizes {
		d, err := qemu.ParseDrive(r.disk, p.after[r.disk])
		if err != nil {
			continue
		}
		d.Size = r.to
		if s, err := d.Render(); err == nil {
			p.after[r.disk] = s
		}
	}
}

// volumeFormat is a volume's format as its name tells it (a file
// storage's extension; raw on block storages).
func volumeFormat(volid string) string {
	_, volname, _ := strings.Cut(volid, ":")
	switch ext := path.Ext(volname); ext {
	case ".qcow2", ".vmdk", ".raw":
		return ext[1:]
	}
	return "raw"
}
