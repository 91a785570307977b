package qemuserver

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Perm is what the permission rules ask of the simulator: the caller and
// its privilege checks, each answering the 403 PVE raises (or nil).
type Perm struct {
	// Root is `$authuser eq 'root@pam'`: it skips every rule.
	Root bool
	// VM is check_vm_perm: privs (all, or with anyOf one of them) on the
	// create's /pool/<pool>, else on /vms/<vmid>.
	VM func(privs []string, anyOf bool) error
	// Check is $rpcenv->check(path, [priv]).
	Check func(path, priv string) error
}

// ParamError is a refusal of one parameter (raise_param_exc: a 400).
type ParamError struct{ Param, Msg string }

func (e *ParamError) Error() string { return e.Param + ": " + e.Msg }

var (
	cpuOptions       = setOf("cores", "cpu", "runningcpu", "cpulimit", "cpuunits", "numa", "smp", "sockets", "vcpus")
	memoryOptions    = setOf("memory", "balloon", "shares", "allow-ksm")
	hwTypeOptions    = setOf("acpi", "hotplug", "kvm", "machine", "runningmachine", "scsihw", "smbios1", "tablet", "vga", "watchdog", "audio0", "rng0")
	generalOptions   = setOf("agent", "autostart", "bios", "description", "keyboard", "localtime", "migrate_downtime", "migrate_speed", "name", "onboot", "ostype", "protection", "reboot", "startdate", "startup", "tdf", "template")
	powerOptions     = setOf("freeze")
	diskOptions      = setOf("boot", "bootdisk", "vmstatestorage")
	cloudinitOptions = setOf("cicustom", "cipassword", "citype", "ciuser", "ciupgrade", "nameserver", "searchdomain", "sshkeys")
	skipPermRe       = regexp.MustCompile(`^(?:unused|serial|usb|hostpci|virtiofs)\d+$`)
	numaRe           = regexp.MustCompile(`^numa\d+$`)
	ipConfigRe       = regexp.MustCompile(`^ipconfig\d+$`)
)

func setOf(keys ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// OptionPrivs is $check_vm_modify_config_perm's table for one option: the
// privileges it needs on the VM (all, or with anyOf one of them). ok is
// false for options it does not check: drives, cdrom, tags and the
// passed-through devices (checked elsewhere, by value), and the options
// only root@pam may set. Reconstruction: PVE refuses those ("only root can
// set '<opt>' config"); the lab lets them through, as its own root@pam!lab
// token sets some in other tests and PVE's list moves between releases.
func OptionPrivs(opt string) (privs []string, anyOf, ok bool) {
	switch {
	case IsDriveKey(opt) || opt == "cdrom" || opt == "tags" || skipPermRe.MatchString(opt):
		return nil, false, false
	case cpuOptions[opt] || numaRe.MatchString(opt):
		return []string{"VM.Config.CPU"}, false, true
	case memoryOptions[opt]:
		return []string{"VM.Config.Memory"}, false, true
	case hwTypeOptions[opt]:
		return []string{"VM.Config.HWType"}, false, true
	case generalOptions[opt]:
		return []string{"VM.Config.Options"}, false, true
	case powerOptions[opt]:
		return []string{"VM.PowerMgmt"}, false, true
	case diskOptions[opt]:
		return []string{"VM.Config.Disk"}, false, true
	case IsNetKey(opt) || opt == "running-nets-host-mtu":
		return []string{"VM.Config.Network"}, false, true
	case cloudinitOptions[opt] || ipConfigRe.MatchString(opt):
		return []string{"VM.Config.Cloudinit", "VM.Config.Network"}, true, true
	case opt == "vmstate":
		return []string{"VM.Config.Disk", "VM.PowerMgmt"}, false, true
	}
	return nil, false, false
}

// CheckModifyConfigPerm is $check_vm_modify_config_perm for keys, in their
// order: each option's privileges (OptionPrivs), and Sys.Modify on / for
// startup.
func CheckModifyConfigPerm(p Perm, keys []string) error {
	if p.Root {
		return nil
	}
	for _, opt := range keys {
		privs, anyOf, ok := OptionPrivs(opt)
		if !ok {
			continue
		}
		if err := p.VM(privs, anyOf); err != nil {
			return err
		}
		if opt == "startup" {
			if err := p.Check("/", "Sys.Modify"); err != nil {
				return err
			}
		}
	}
	return nil
}

var (
	serialRe   = regexp.MustCompile(`^serial\d+$`)
	usbRe      = regexp.MustCompile(`^usb\d+$`)
	hostPCIRe  = regexp.MustCompile(`^hostpci\d+$`)
	virtiofsRe = regexp.MustCompile(`^virtiofs\d+$`)
)

// CheckCreateDevicePerm is the checks create_vm makes on passed-through
// devices after $check_vm_modify_config_perm (src/PVE/API2/Qemu.pm, master
// of 2026-08, 9.2.6): $check_vm_create_serial_perm,
// check_vm_create_usb_perm, check_vm_create_hostpci_perm, check_rng_perm,
// check_vm_create_dir_perm and $check_cpu_model_access, over conf's keys
// sorted. A real device is root's alone ("only root can set …", a die:
// 500); a mapped one needs Mapping.Use on its /mapping path.
// Reconstruction: the lab has no resource mappings, so a mapping's
// existence is not checked, only the privilege.
func CheckCreateDevicePerm(p Perm, conf map[string]string) error {
	if p.Root {
		return nil
	}
	mapping := func(path string) error { return p.Check(path, "Mapping.Use") }
	hwType := func() error { return p.VM([]string{"VM.Config.HWType"}, false) }
	for _, opt := range slices.Sorted(maps.Keys(conf)) {
		v := conf[opt]
		switch {
		case serialRe.MatchString(opt):
			if v != "socket" {
				return pvecommon.Die("only root can set '%s' config for real devices", opt)
			}
			if err := hwType(); err != nil {
				return err
			}
		case usbRe.MatchString(opt):
			if err := hwType(); err != nil {
				return err
			}
			d := pvecommon.ParseProps(v, "host")
			switch {
			case d.Get("host") != "" && !strings.EqualFold(d.Get("host"), "spice"):
				return pvecommon.Die("only root can set '%s' config for real devices", opt)
			case d.Get("host") != "":
			case d.Get("mapping") != "":
				if err := mapping("/mapping/usb/" + d.Get("mapping")); err != nil {
					return err
				}
			default:
				return pvecommon.Die("either 'host' or 'mapping' must be set.")
			}
		case hostPCIRe.MatchString(opt):
			d := pvecommon.ParseProps(v, "host")
			switch {
			case d.Get("host") != "":
				return pvecommon.Die("only root can set '%s' config for non-mapped devices", opt)
			case d.Get("mapping") != "":
				if err := mapping("/mapping/pci/" + d.Get("mapping")); err != nil {
					return err
				}
				if err := hwType(); err != nil {
					return err
				}
			default:
				return pvecommon.Die("either 'host' or 'mapping' must be set.")
			}
			if d.Has("romfile") {
				return &ParamError{Param: opt, Msg: "only root@pam can set 'romfile' option"}
			}
		case opt == "rng0":
			if err := hwType(); err != nil {
				return err
			}
			if pvecommon.ParseProps(v, "source").Get("source") == "/dev/hwrng" {
				if err := mapping("/mapping/hwrng"); err != nil {
					return err
				}
			}
		case virtiofsRe.MatchString(opt):
			if err := p.VM([]string{"VM.Config.Disk"}, false); err != nil {
				return err
			}
			if err := mapping("/mapping/dir/" + pvecommon.ParseProps(v, "dirid").Get("dirid")); err != nil {
				return err
			}
		case opt == "cpu":
			// $check_cpu_model_access: a custom model (custom-<name>) needs
			// Mapping.Use on /mapping/cpu/<name>; the built-in ones are free.
			if name, ok := strings.CutPrefix(pvecommon.ParseProps(v, "cputype").Get("cputype"), "custom-"); ok {
				if err := mapping("/mapping/cpu/" + name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
