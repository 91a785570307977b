package pvecontainer

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// The property string shapes of pve-container's formats (LXC/Config.pm
// $netconf_desc, $rootfs_desc/$mp_desc, $features_desc): what parsing and
// printing need of them.
var (
	netShape     = pveformat.Shape{Booleans: []string{"firewall", "link_down"}}
	volumeShape  = pveformat.Shape{DefaultKey: "volume", Booleans: []string{"acl", "backup", "quota", "ro", "replicate", "shared"}, Sizes: []string{"size"}}
	featureShape = pveformat.Shape{Booleans: []string{"nesting", "keyctl", "fuse", "mknod", "force_rw_sys"}}
)

var (
	netKeyRe   = regexp.MustCompile(`^net([0-9]|[12][0-9]|3[01])$`)
	mountKeyRe = regexp.MustCompile(`^mp([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])$`)
)

var netKeys = []string{"name", "bridge", "hwaddr", "ip", "gw", "ip6", "gw6", "tag", "trunks", "firewall", "mtu", "rate", "link_down", "type"}
var mountOpts = []string{"mp", "backup", "acl", "quota", "ro", "replicate", "shared", "mountoptions"}
var featureKeys = []string{"nesting", "keyctl", "fuse", "mknod", "force_rw_sys", "mount"}

// volWant is a rootfs or mount point as the task asks it.
type volWant struct {
	storage string
	size    int64 // bytes, 0 = not given
	opts    pveformat.Props
}

// want is the task's configuration, checked and in PVE's syntax.
type want struct {
	scalars  map[string]string // cores, memory, swap, onboot, startup, description, hostname (adopt)
	tags     []string          // nil: not given
	nets     map[string]pveformat.Props
	features pveformat.Props
	rootfs   *volWant
	mounts   map[string]volWant
	unpriv   *bool
}

func buildWant(p params) (*want, error) {
	if p.Hostname == "0" {
		// Perl-false: create_vm's `hostname ||= "CT$vmid"` replaces it and
		// vmstatus lists the CT as CT<vmid>, so it could never prove the
		// container is this task's: a create would end unverified.
		return nil, fmt.Errorf(`hostname: "0" is no hostname to PVE (it names the container CT%d instead), so it could never prove the container is this task's (K1); give another hostname; nothing was changed`, p.VMID)
	}
	w := &want{scalars: map[string]string{}, nets: map[string]pveformat.Props{}, mounts: map[string]volWant{}, unpriv: p.Unprivileged}
	for k, v := range map[string]*int{"cores": p.Cores, "memory": p.Memory, "swap": p.Swap} {
		if v != nil {
			w.scalars[k] = strconv.Itoa(*v)
		}
	}
	if p.OnBoot != nil {
		w.scalars["onboot"] = map[bool]string{true: "1", false: "0"}[*p.OnBoot]
	}
	if p.Startup != nil {
		w.scalars["startup"] = *p.Startup
	}
	if p.Description != nil {
		// Stored as "#" lines through encode_text (pve-container
		// write_pct_config): a line must read back as written.
		if err := pveformat.CheckStoredText("description", *p.Description); err != nil {
			return nil, err
		}
		w.scalars["description"] = *p.Description
	}
	if p.Adopt && p.Hostname != "" {
		w.scalars["hostname"] = p.Hostname
	}
	if p.Tags != nil {
		w.tags = slices.Sorted(slices.Values(p.Tags))
		w.tags = slices.Compact(w.tags)
	}
	for k, v := range p.Nets {
		if !netKeyRe.MatchString(k) {
			return nil, fmt.Errorf("nets.%s: not a NIC key (net0 … net31)", k)
		}
		props, err := propsOf("nets."+k, v, netShape, netKeys)
		if err != nil {
			return nil, err
		}
		w.nets[k] = props
	}
	if p.Features != nil {
		props, err := propsOf("features", p.Features, featureShape, featureKeys)
		if err != nil {
			return nil, err
		}
		w.features = props
	}
	if p.RootFS != nil {
		v, err := volumeOf("rootfs", p.RootFS, false)
		if err != nil {
			return nil, err
		}
		w.rootfs = &v
	}
	for k, raw := range p.Mounts {
		if !mountKeyRe.MatchString(k) {
			return nil, fmt.Errorf("mounts.%s: not a mount point key (mp0 … mp255)", k)
		}
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("mounts.%s: a dict of storage, size, mp and options", k)
		}
		v, err := volumeOf("mounts."+k, m, true)
		if err != nil {
			return nil, err
		}
		w.mounts[k] = v
	}
	return w, nil
}

// propsOf reads a dict or PVE's property string, with only known keys.
func propsOf(option string, v any, shape pveformat.Shape, known []string) (pveformat.Props, error) {
	var p pveformat.Props
	switch x := v.(type) {
	case string:
		parsed, err := pveformat.Parse(x, shape)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", option, err)
		}
		p = parsed
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p.Set(k, scalar(x[k]))
		}
	default:
		return nil, fmt.Errorf("%s: a dict or PVE's property string", option)
	}
	for _, kv := range p {
		if !slices.Contains(known, kv.Key) {
			return nil, fmt.Errorf("%s: %q is not a key of it (%s)", option, kv.Key, strings.Join(known, ", "))
		}
		if slices.Contains(shape.Booleans, kv.Key) {
			if b := normBool(kv.Value); b != "" {
				p.Set(kv.Key, b)
			} else {
				return nil, fmt.Errorf("%s: %s: %q is not a boolean", option, kv.Key, kv.Value)
			}
		}
	}
	return p, nil
}

// volumeOf reads a rootfs or mount point dict: storage, size, options.
func volumeOf(option string, m map[string]any, mount bool) (volWant, error) {
	var v volWant
	for _, k := range slices.Sorted(maps.Keys(m)) {
		val := scalar(m[k])
		switch {
		case k == "storage":
			v.storage = val
		case k == "size":
			n, err := pveformat.ParseSize(val)
			if err != nil || n <= 0 {
				return v, fmt.Errorf("%s.size: %q is not a size (8G, 512M)", option, val)
			}
			v.size = n
		case mount && slices.Contains(mountOpts, k):
			if slices.Contains(volumeShape.Booleans, k) {
				b := normBool(val)
				if b == "" {
					return v, fmt.Errorf("%s.%s: %q is not a boolean", option, k, val)
				}
				val = b
			}
			v.opts.Set(k, val)
		default:
			return v, fmt.Errorf("%s: %q is not a key of it", option, k)
		}
	}
	if _, ok := v.opts.Get("mp"); mount && !ok {
		return v, fmt.Errorf("%s.mp: required (the path in the container, /data)", option)
	}
	return v, nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case bool:
		return map[bool]string{true: "1", false: "0"}[x]
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// normBool is a boolean word as PVE stores it (1 or 0); "" when v is none.
func normBool(v string) string {
	if b := pveformat.NormBool(v); b == "1" || b == "0" {
		return b
	}
	return ""
}

// printNet prints a NIC as pct config shows it: name first, the rest
// sorted (print_property_string of $netconf_desc).
func printNet(p pveformat.Props) string {
	rest := slices.Clone(p)
	rest.Del("name")
	s, _ := pveformat.Print(rest, netShape)
	name, _ := p.Get("name")
	if s == "" {
		return "name=" + name
	}
	return "name=" + name + "," + s
}

// gib is a size as create_disks takes it: "storage:N", N in GiB.
func gib(bytes int64) string {
	return strconv.FormatFloat(float64(bytes)/(1<<30), 'f', -1, 64)
}

// optionOf names the Ansible option behind a PVE key.
func optionOf(key string) string {
	switch {
	case netKeyRe.MatchString(key):
		return "nets." + key
	case mountKeyRe.MatchString(key):
		return "mounts." + key
	case key == "ssh-public-keys":
		return "ssh_public_keys"
	}
	return key
}
