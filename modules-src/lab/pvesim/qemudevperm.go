package pvesim

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// The checks qemu-server's create_vm makes on passed-through devices after
// $check_vm_modify_config_perm (src/PVE/API2/Qemu.pm, master of 2026-08,
// 9.2.6): $check_vm_create_serial_perm, check_vm_create_usb_perm,
// check_vm_create_hostpci_perm, check_rng_perm, check_vm_create_dir_perm
// and $check_cpu_model_access. root@pam skips them all. A real device is
// root's alone ("only root can set …", a die: 500); a mapped one needs
// Mapping.Use on its /mapping path. Reconstruction: the lab has no
// resource mappings, so a mapping's existence is not checked, only the
// privilege.
var (
	qmSerialRe   = regexp.MustCompile(`^serial\d+$`)
	qmUSBRe      = regexp.MustCompile(`^usb\d+$`)
	qmHostPCIRe  = regexp.MustCompile(`^hostpci\d+$`)
	qmVirtiofsRe = regexp.MustCompile(`^virtiofs\d+$`)
)

func checkVMCreateDevicePerm(db *ConfigDB, who *principal, vmid int, pool string, conf map[string]string) error {
	if isRootUser(who) {
		return nil
	}
	mapping := func(path string) error { return rpcCheck(db, who, path, "Mapping.Use") }
	for _, opt := range slices.Sorted(maps.Keys(conf)) {
		v := conf[opt]
		switch {
		case qmSerialRe.MatchString(opt):
			if v != "socket" {
				return pveDie("only root can set '%s' config for real devices", opt)
			}
			if err := vmCheck(db, who, vmid, pool, []string{"VM.Config.HWType"}, false); err != nil {
				return err
			}
		case qmUSBRe.MatchString(opt):
			if err := vmCheck(db, who, vmid, pool, []string{"VM.Config.HWType"}, false); err != nil {
				return err
			}
			d := parseProps(v, "host")
			switch {
			case d.get("host") != "" && !strings.EqualFold(d.get("host"), "spice"):
				return pveDie("only root can set '%s' config for real devices", opt)
			case d.get("host") != "":
			case d.get("mapping") != "":
				if err := mapping("/mapping/usb/" + d.get("mapping")); err != nil {
					return err
				}
			default:
				return pveDie("either 'host' or 'mapping' must be set.")
			}
		case qmHostPCIRe.MatchString(opt):
			d := parseProps(v, "host")
			switch {
			case d.get("host") != "":
				return pveDie("only root can set '%s' config for non-mapped devices", opt)
			case d.get("mapping") != "":
				if err := mapping("/mapping/pci/" + d.get("mapping")); err != nil {
					return err
				}
				if err := vmCheck(db, who, vmid, pool, []string{"VM.Config.HWType"}, false); err != nil {
					return err
				}
			default:
				return pveDie("either 'host' or 'mapping' must be set.")
			}
			if _, ok := d.vals["romfile"]; ok {
				return errParams(map[string]string{opt: "only root@pam can set 'romfile' option"})
			}
		case opt == "rng0":
			if err := vmCheck(db, who, vmid, pool, []string{"VM.Config.HWType"}, false); err != nil {
				return err
			}
			if parseProps(v, "source").get("source") == "/dev/hwrng" {
				if err := mapping("/mapping/hwrng"); err != nil {
					return err
				}
			}
		case qmVirtiofsRe.MatchString(opt):
			if err := vmCheck(db, who, vmid, pool, []string{"VM.Config.Disk"}, false); err != nil {
				return err
			}
			if err := mapping("/mapping/dir/" + parseProps(v, "dirid").get("dirid")); err != nil {
				return err
			}
		case opt == "cpu":
			// $check_cpu_model_access: a custom model (custom-<name>) needs
			// Mapping.Use on /mapping/cpu/<name>; the built-in ones are free.
			if name, ok := strings.CutPrefix(parseProps(v, "cputype").get("cputype"), "custom-"); ok {
				if err := mapping("/mapping/cpu/" + name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
