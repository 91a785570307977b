package options

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// Want is the task's configuration in PVE's terms, checked before any
// request: every error names the Ansible option.
type Want struct {
	// Scalars are plain config keys in PVE's string form (cores "2",
	// numa "1", tags "a;b", sshkeys URL-encoded, nameserver space-joined).
	Scalars  map[string]string
	Nets     map[string]Net
	Disks    map[string]Disk
	IPConfig map[string]qemu.IPConfig
	sshkeys  []string // decoded, for comparison (K12)
	HasCI    bool     // a cloud-init option was given
}

// Net is what a task says about one NIC: only the keys it gives are
// merged into what is there (K16: the MAC is always kept).
type Net struct {
	model, bridge, trunks, mac string
	tag, mtu                   *int
	firewall, linkDown         *bool
	rate                       *float64
	queues                     *int
}

// Disk is a disk as a minimum size (K11) and drive options merged key
// by key; storage is where a new disk is allocated.
type Disk struct {
	Storage string
	Size    int64 // bytes; 0 = no size given
	Media   string
	File    string            // a volume to attach as is (an ISO for a CD-ROM)
	Opts    map[string]string // PVE drive keys (cache, discard, ssd, iothread, backup, replicate, format…)
}

// driveOptionKeys are the drive options a task may merge into an
// existing disk (QemuServer/Drive.pm): never `file`, which would swap the
// volume (K16).
var driveOptionKeys = []string{"aio", "backup", "cache", "detect_zeroes", "discard", "iothread", "replicate", "ro", "serial", "ssd", "format", "media"}

// scalarOptions maps Ansible options to PVE keys for the plain settings.
var scalarOptions = []struct{ opt, key string }{
	{"cores", "cores"}, {"sockets", "sockets"}, {"memory", "memory"}, {"balloon", "balloon"}, {"cpu", "cpu"},
	{"numa", "numa"}, {"onboot", "onboot"}, {"startup", "startup"}, {"description", "description"},
	{"ciuser", "ciuser"}, {"cipassword", "cipassword"}, {"searchdomain", "searchdomain"}, {"citype", "citype"},
	{"cicustom", "cicustom"}, {"machine", "machine"}, {"bios", "bios"}, {"ostype", "ostype"}, {"scsihw", "scsihw"},
	{"boot", "boot"},
}

var ciKeys = []string{"ciuser", "cipassword", "searchdomain", "citype", "cicustom", "nameserver", "sshkeys"}

// NewWant turns the validated parameters into a Want, refusing what PVE
// would refuse (property strings, sizes, NIC keys, ipconfig) with the
// option's name.
func NewWant(p Params) (*Want, error) {
	w := &Want{Scalars: map[string]string{}, Nets: map[string]Net{}, Disks: map[string]Disk{}, IPConfig: map[string]qemu.IPConfig{}}
	for _, add := range []func(Params, *Want) error{addScalars, addNetworks, addDisks} {
		if err := add(p, w); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// addScalars checks and encodes the options that are one config key each
// (PVE's own formats: dns-name, pve-tag, the agent and ssh-key strings).
func addScalars(p Params, w *Want) error {
	vals := map[string]any{"cores": p.Cores, "sockets": p.Sockets, "memory": p.Memory, "balloon": p.Balloon, "cpu": p.CPU,
		"numa": p.NUMA, "onboot": p.OnBoot, "startup": p.Startup, "description": p.Description, "ciuser": p.CIUser,
		"cipassword": p.CIPassword, "searchdomain": p.SearchDomain, "citype": p.CIType, "cicustom": p.CICustom,
		"machine": p.Machine, "bios": p.BIOS, "ostype": p.OSType, "scsihw": p.SCSIHW, "boot": p.Boot}
	for _, so := range scalarOptions {
		s, ok := scalarString(vals[so.opt])
		if ok {
			w.Scalars[so.key] = s
		}
	}
	if p.Description != nil {
		// Stored as "#" lines through encode_text (qemu-server
		// $generate_raw_config): it must read back as written.
		if err := pveformat.CheckStoredText("description", *p.Description); err != nil {
			return err
		}
	}
	if p.Name != "" {
		if err := pveformat.CheckFormat("dns-name", p.Name); err != nil {
			return fmt.Errorf("name: %w", err)
		}
		if p.Name == "0" {
			// Perl-false: clone_vm's `if ($param->{name})` names the clone
			// Copy-of-VM-…, and vmstatus lists the VM as "VM <vmid>".
			return errors.New(`name: "0" is no name to PVE (a clone is named Copy-of-VM-… instead, and the VM is listed as "VM <vmid>"), so it could never prove the VM is this task's (K1); give another name; nothing was changed`)
		}
		w.Scalars["name"] = p.Name
	}
	if p.CPU != nil {
		if err := checkCPU(*p.CPU); err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
	}
	if p.Tags != nil {
		tags := slices.Clone(p.Tags)
		for _, t := range tags {
			if !tagRe.MatchString(t) {
				return fmt.Errorf("tags: %q is not a valid tag (letters, digits, _ - + .; PVE's pve-tag format)", t)
			}
		}
		slices.Sort(tags)
		w.Scalars["tags"] = strings.Join(slices.Compact(tags), ";")
	}
	if p.Agent != nil {
		a, err := agentString(p.Agent)
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		w.Scalars["agent"] = a
	}
	if p.Nameservers != nil {
		for _, ns := range p.Nameservers {
			if err := pveformat.CheckFormat("ip", ns); err != nil {
				return fmt.Errorf("nameservers: %q: %w", ns, err)
			}
		}
		w.Scalars["nameserver"] = strings.Join(p.Nameservers, " ")
	}
	if p.SSHKeys != nil {
		for i, k := range p.SSHKeys {
			if strings.ContainsAny(k, "\n\r") || strings.TrimSpace(k) == "" {
				return fmt.Errorf("sshkeys: each element is one public key on one line")
			}
			// PVE checks every key (PVE::Tools::validate_ssh_public_keys,
			// ssh-keygen -l) and refuses the whole update otherwise.
			if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil {
				return fmt.Errorf("sshkeys: element %d is not an SSH public key (%v); PVE would refuse it with 'SSH public key validation error'", i+1, err)
			}
		}
		w.sshkeys = slices.Clone(p.SSHKeys)
		w.Scalars["sshkeys"] = qemu.EncodeSSHKeys(p.SSHKeys) // K12: stored URL-encoded
	}
	for _, k := range ciKeys {
		if _, ok := w.Scalars[k]; ok {
			w.HasCI = true
		}
	}
	return nil
}

// addNetworks parses the NICs and the cloud-init ipconfigN keys.
func addNetworks(p Params, w *Want) error {
	for _, key := range slices.Sorted(maps.Keys(p.Nets)) {
		nw, err := parseNetWant(key, p.Nets[key])
		if err != nil {
			return fmt.Errorf("nets.%s: %w", key, err)
		}
		w.Nets[key] = nw
	}
	for _, key := range slices.Sorted(maps.Keys(p.IPConfig)) {
		if !qemu.IsIPConfig(key) {
			return fmt.Errorf("ipconfig.%s: not a cloud-init network key (ipconfig0 … ipconfig31)", key)
		}
		ic, err := parseIPConfigWant(key, p.IPConfig[key])
		if err != nil {
			return fmt.Errorf("ipconfig.%w", err)
		}
		w.IPConfig[key] = ic
		w.HasCI = true
	}
	return nil
}

// addDisks parses the disks, the CD-ROM (ide2) and the EFI and TPM state
// disks, which all land in the config's disk keys.
func addDisks(p Params, w *Want) error {
	for _, key := range slices.Sorted(maps.Keys(p.Disks)) {
		dw, err := parseDiskWant(key, p.Disks[key])
		if err != nil {
			return fmt.Errorf("disks.%s: %w", key, err)
		}
		w.Disks[key] = dw
	}
	if p.CDROM != "" {
		if _, ok := w.Disks["ide2"]; ok {
			return fmt.Errorf("cdrom: the CD-ROM goes on ide2, which disks also gives")
		}
		if _, _, ok := strings.Cut(p.CDROM, ":"); !ok && p.CDROM != "none" && p.CDROM != "cdrom" {
			return fmt.Errorf("cdrom: %q is not a volume ID (storage:iso/name.iso)", p.CDROM)
		}
		w.Disks["ide2"] = Disk{File: p.CDROM, Media: "cdrom", Opts: map[string]string{}}
	}
	if p.EFIDisk != nil {
		d, err := specialDisk("efidisk", p.EFIDisk, map[string]string{"efitype": "efitype", "pre_enrolled_keys": "pre-enrolled-keys", "format": "format"})
		if err != nil {
			return err
		}
		w.Disks["efidisk0"] = d
	}
	if p.TPMState != nil {
		d, err := specialDisk("tpmstate", p.TPMState, map[string]string{"version": "version"})
		if err != nil {
			return err
		}
		w.Disks["tpmstate0"] = d
	}
	return nil
}

var tagRe = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_\-+.]*$`)

// scalarString renders an option value as PVE stores it; ok is false for
// an option the task does not give.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case *int:
		if x == nil {
			return "", false
		}
		return strconv.Itoa(*x), true
	case *bool:
		if x == nil {
			return "", false
		}
		return boolStr(*x), true
	case *string:
		if x == nil {
			return "", false
		}
		return *x, true
	case string:
		return x, x != ""
	}
	return fmt.Sprint(v), true
}

func boolStr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// agentString accepts true/false, PVE's string, or a dict of its keys.
func agentString(v any) (string, error) {
	var s string
	switch x := v.(type) {
	case bool:
		s = boolStr(x)
	case map[string]any:
		s = propsString(x, nil)
	default:
		s = pveapi.String(v)
		if b, err := pveapi.ParseBool(s); err == nil && !strings.Contains(s, "=") {
			s = boolStr(b)
		}
	}
	a, err := qemu.ParseAgent(s)
	if err != nil {
		return "", err
	}
	return a.Render()
}

// propsString renders a dict as a PVE property string (booleans 0/1), keys
// renamed by rename (Ansible's pre_enrolled_keys is PVE's pre-enrolled-keys).
func propsString(m map[string]any, rename map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		key := k
		if r, ok := rename[k]; ok {
			key = r
		}
		v := m[k]
		if b, ok := v.(bool); ok {
			v = boolStr(b)
		}
		parts = append(parts, key+"="+pveapi.String(v))
	}
	return strings.Join(parts, ",")
}

// parseDiskWant reads a disk as a size ("32G"), PVE's string
// ("vmdata:32,discard=on,ssd=1" or "isos:iso/x.iso,media=cdrom"), or a
// dict {size, storage, <drive options>}.
func parseDiskWant(key string, v any) (Disk, error) {
	if !qemu.IsDisk(key) || strings.HasPrefix(key, "efidisk") || strings.HasPrefix(key, "tpmstate") {
		return Disk{}, fmt.Errorf("not a disk key (scsi0 … scsi30, virtio0 … virtio15, sata0 … sata5, ide0 … ide3; use efidisk and tpmstate for those)")
	}
	d := Disk{Opts: map[string]string{}}
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, ":") {
			size, err := pveformat.ParseSize(x)
			if err != nil {
				return Disk{}, fmt.Errorf("%q is neither a size PVE can parse (32G, 512M) nor a volume (storage:32,…): %w", x, err)
			}
			d.Size = size
			return d, nil
		}
		dr, err := qemu.ParseDrive(key, x)
		if err != nil {
			return Disk{}, err
		}
		if st, gib, ok := dr.Allocation(); ok {
			d.Storage, d.Size = st, int64(gib*float64(1<<30))
		} else {
			d.File = dr.File
		}
		d.Media = dr.Media
		rendered, err := dr.Render()
		if err != nil {
			return Disk{}, err
		}
		p, _ := pveformat.Parse(rendered, pveformat.Shape{DefaultKey: "file"})
		for _, kv := range p {
			if kv.Key == "file" || kv.Key == "size" || kv.Key == "media" {
				continue
			}
			d.Opts[kv.Key] = kv.Value
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			s := pveapi.String(x[k])
			if b, ok := x[k].(bool); ok {
				s = boolStr(b)
			}
			switch k {
			case "size":
				n, err := pveformat.ParseSize(s)
				if err != nil {
					return Disk{}, fmt.Errorf("size: %w", err)
				}
				d.Size = n
			case "storage":
				d.Storage = s
			case "file", "volume":
				d.File = s
			case "media":
				d.Media = s
			default:
				if !slices.Contains(driveOptionKeys, k) {
					return Disk{}, fmt.Errorf("%q is not a drive option this module merges (size, storage, file, %s)", k, strings.Join(driveOptionKeys, ", "))
				}
				d.Opts[k] = s
			}
		}
	default:
		return Disk{}, fmt.Errorf("give a size (32G), PVE's string (storage:32,ssd=1) or a dict, not %T", v)
	}
	if d.Media == "cdrom" && d.Size > 0 {
		return Disk{}, fmt.Errorf("a CD-ROM has no size")
	}
	if d.File == "" && d.Size == 0 && d.Media != "cdrom" {
		return Disk{}, fmt.Errorf("no size: give the minimum size (32G)")
	}
	return d, nil
}

// specialDisk reads efidisk/tpmstate {storage, …}.
func specialDisk(opt string, m map[string]any, keys map[string]string) (Disk, error) {
	d := Disk{Opts: map[string]string{}}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] == nil {
			continue // a sub-option not given
		}
		s := pveapi.String(m[k])
		if b, ok := m[k].(bool); ok {
			s = boolStr(b)
		}
		if k == "storage" {
			d.Storage = s
			continue
		}
		pk, ok := keys[k]
		if !ok {
			return Disk{}, fmt.Errorf("%s.%s: not an option (storage, %s)", opt, k, strings.Join(slices.Sorted(maps.Keys(keys)), ", "))
		}
		d.Opts[pk] = s
	}
	if d.Storage == "" {
		return Disk{}, fmt.Errorf("%s.storage: required", opt)
	}
	return d, nil
}

// DriveString is the create API's syntax for a new disk: storage:GiB
// with its options (PVE allocates it: QemuServer.pm $NEW_DISK_RE). The
// size is rounded up to whole GiB, never down (K11).
func (d Disk) DriveString(key string) (string, error) {
	var file string
	switch {
	case d.File != "":
		file = d.File
	case key == "efidisk0" || key == "tpmstate0":
		file = d.Storage + ":1" // PVE sizes them itself
	case d.Storage == "":
		return "", fmt.Errorf("disks.%s: storage is required to create a disk", key)
	default:
		gib := (d.Size + (1<<30 - 1)) >> 30
		file = fmt.Sprintf("%s:%d", d.Storage, gib)
	}
	parts := []string{file}
	if d.Media != "" {
		parts = append(parts, "media="+d.Media)
	}
	for _, k := range slices.Sorted(maps.Keys(d.Opts)) {
		parts = append(parts, k+"="+d.Opts[k])
	}
	return strings.Join(parts, ","), nil
}

// Of names the Ansible option behind a PVE config key, for errors.
func Of(key string) string {
	switch {
	case qemu.IsNet(key):
		return "nets." + key
	case qemu.IsIPConfig(key):
		return "ipconfig." + key
	case key == "efidisk0":
		return "efidisk"
	case key == "tpmstate0":
		return "tpmstate"
	case key == "ide2":
		return "cdrom or disks.ide2"
	case qemu.IsDisk(key):
		return "disks." + key
	case key == "nameserver":
		return "nameservers"
	}
	return key
}

// cpuTypeRe is the cputype of pve-cpu-conf (QemuServer/CPUConfig.pm): a
// model name or custom-<name>; flags follow as ;-separated +flag/-flag.
var cpuTypeRe = regexp.MustCompile(`^(?:custom-)?[a-zA-Z0-9_.+-]+$`)

func checkCPU(s string) error {
	p, err := pveformat.Parse(s, pveformat.Shape{DefaultKey: "cputype"})
	if err != nil {
		return err
	}
	t, _ := p.Get("cputype")
	if !cpuTypeRe.MatchString(t) {
		return fmt.Errorf("%q is not a CPU model (host, x86-64-v2-AES, kvm64, custom-<name>)", t)
	}
	for _, kv := range p {
		switch kv.Key {
		case "cputype", "flags", "hidden", "hv-vendor-id", "phys-bits", "reported-model", "guest-phys-bits":
		default:
			return fmt.Errorf("%q is not a key of PVE's cpu option", kv.Key)
		}
	}
	return nil
}

// CreateConfig is the wanted config but for the disks: scalars, NICs and
// cloud-init IP configs rendered as PVE stores them.
func (w *Want) CreateConfig() (map[string]string, error) {
	cfg := map[string]string{}
	for k, val := range w.Scalars {
		cfg[k] = val
	}
	for _, k := range slices.Sorted(maps.Keys(w.Nets)) {
		n := w.Nets[k].Apply(qemu.Net{})
		s, err := n.Render()
		if err != nil {
			return nil, fmt.Errorf("nets.%s: %w", k, err)
		}
		cfg[k] = s
	}
	for k, ic := range w.IPConfig {
		s, err := ic.Render()
		if err != nil {
			return nil, fmt.Errorf("ipconfig.%s: %w", k, err)
		}
		cfg[k] = s
	}
	return cfg, nil
}
