package qemuserver

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// recorder is a Perm that grants what it is given and records each ask.
type recorder struct {
	granted map[string]bool // "vm:VM.Config.CPU", "/mapping/usb/x:Mapping.Use"
	asked   []string
}

func (r *recorder) perm(root bool) Perm {
	return Perm{
		Root: root,
		VM: func(privs []string, anyOf bool) error {
			r.asked = append(r.asked, fmt.Sprintf("vm:%s any=%v", strings.Join(privs, "|"), anyOf))
			for _, p := range privs {
				ok := r.granted["vm:"+p]
				if anyOf && ok {
					return nil
				}
				if !anyOf && !ok {
					return errors.New("403 " + p)
				}
			}
			if anyOf {
				return errors.New("403 any " + strings.Join(privs, "|"))
			}
			return nil
		},
		Check: func(path, priv string) error {
			r.asked = append(r.asked, path+":"+priv)
			if !r.granted[path+":"+priv] {
				return errors.New("403 " + path + " " + priv)
			}
			return nil
		},
	}
}

// $check_vm_modify_config_perm's tables: each option's privilege.
func TestOptionPrivs(t *testing.T) {
	cases := map[string]string{
		"cores": "VM.Config.CPU", "numa1": "VM.Config.CPU", "memory": "VM.Config.Memory", "balloon": "VM.Config.Memory", "shares": "VM.Config.Memory",
		"vga": "VM.Config.HWType", "rng0": "VM.Config.HWType", "name": "VM.Config.Options", "onboot": "VM.Config.Options",
		"startup": "VM.Config.Options", "freeze": "VM.PowerMgmt", "boot": "VM.Config.Disk", "net3": "VM.Config.Network",
		"ciuser": "VM.Config.Cloudinit|VM.Config.Network any", "ipconfig2": "VM.Config.Cloudinit|VM.Config.Network any",
		"vmstate": "VM.Config.Disk|VM.PowerMgmt",
		// not checked here: drives, tags, devices (elsewhere), root-only options
		"scsi0": "-", "cdrom": "-", "tags": "-", "usb0": "-", "hostpci1": "-", "serial0": "-", "virtiofs0": "-",
		"unused0": "-", "args": "-", "lock": "-",
	}
	for opt, want := range cases {
		privs, anyOf, ok := OptionPrivs(opt)
		got := "-"
		if ok {
			got = strings.Join(privs, "|")
			if anyOf {
				got += " any"
			}
		}
		if got != want {
			t.Errorf("OptionPrivs(%s) = %q, want %q", opt, got, want)
		}
	}
}

// The check walks the options in order and stops at the first refusal;
// startup also needs Sys.Modify on /; root@pam is asked nothing.
func TestCheckModifyConfigPerm(t *testing.T) {
	r := &recorder{granted: map[string]bool{"vm:VM.Config.Options": true, "vm:VM.Config.Network": true}}
	if err := CheckModifyConfigPerm(r.perm(false), []string{"name", "ciuser", "scsi0", "startup"}); err == nil || !strings.Contains(err.Error(), "/ Sys.Modify") {
		t.Fatalf("startup without Sys.Modify: %v", err)
	}
	want := []string{"vm:VM.Config.Options any=false", "vm:VM.Config.Cloudinit|VM.Config.Network any=true", "vm:VM.Config.Options any=false", "/:Sys.Modify"}
	if !slices.Equal(r.asked, want) {
		t.Fatalf("asked %q, want %q", r.asked, want)
	}
	r = &recorder{granted: map[string]bool{"vm:VM.Config.Options": true}}
	if err := CheckModifyConfigPerm(r.perm(false), []string{"memory", "name"}); err == nil || !strings.Contains(err.Error(), "VM.Config.Memory") || len(r.asked) != 1 {
		t.Fatalf("memory without VM.Config.Memory: %v (asked %q)", err, r.asked)
	}
	r = &recorder{}
	if err := CheckModifyConfigPerm(r.perm(true), []string{"memory", "startup"}); err != nil || len(r.asked) != 0 {
		t.Fatalf("root: %v, asked %q", err, r.asked)
	}
}

// create_vm's device checks: real devices are root's, mapped ones need
// Mapping.Use on their mapping, romfile is a parameter error.
func TestCheckCreateDevicePerm(t *testing.T) {
	hw := map[string]bool{"vm:VM.Config.HWType": true, "vm:VM.Config.Disk": true}
	with := func(extra ...string) map[string]bool {
		m := map[string]bool{}
		for k, v := range hw {
			m[k] = v
		}
		for _, e := range extra {
			m[e] = true
		}
		return m
	}
	cases := []struct {
		conf    map[string]string
		granted map[string]bool
		want    string // "" allowed, else a part of the error
	}{
		{map[string]string{"serial0": "socket"}, hw, ""},
		{map[string]string{"serial0": "/dev/ttyS0"}, hw, "only root can set 'serial0' config for real devices"},
		{map[string]string{"serial0": "socket"}, map[string]bool{}, "403 VM.Config.HWType"},
		{map[string]string{"usb0": "host=spice"}, hw, ""},
		{map[string]string{"usb0": "host=1234:5678"}, hw, "only root can set 'usb0' config for real devices"},
		{map[string]string{"usb0": "mapping=stick"}, hw, "403 /mapping/usb/stick Mapping.Use"},
		{map[string]string{"usb0": "mapping=stick"}, with("/mapping/usb/stick:Mapping.Use"), ""},
		{map[string]string{"usb0": "usb3=1"}, hw, "either 'host' or 'mapping' must be set."},
		{map[string]string{"hostpci0": "0000:01:00.0"}, hw, "only root can set 'hostpci0' config for non-mapped devices"},
		{map[string]string{"hostpci0": "mapping=gpu"}, with("/mapping/pci/gpu:Mapping.Use"), ""},
		{map[string]string{"hostpci0": "mapping=gpu,romfile=x.rom"}, with("/mapping/pci/gpu:Mapping.Use"), "hostpci0: only root@pam can set 'romfile' option"},
		{map[string]string{"rng0": "source=/dev/urandom"}, hw, ""},
		{map[string]string{"rng0": "source=/dev/hwrng"}, hw, "403 /mapping/hwrng Mapping.Use"},
		{map[string]string{"virtiofs0": "dirid=share"}, hw, "403 /mapping/dir/share Mapping.Use"},
		{map[string]string{"cpu": "host"}, map[string]bool{}, ""},
		{map[string]string{"cpu": "cputype=custom-fast"}, map[string]bool{}, "403 /mapping/cpu/fast Mapping.Use"},
	}
	for _, c := range cases {
		r := &recorder{granted: c.granted}
		err := CheckCreateDevicePerm(r.perm(false), c.conf)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v, want allowed", c.conf, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: %v, want %q", c.conf, err, c.want)
		}
		if r := (&recorder{}); CheckCreateDevicePerm(r.perm(true), c.conf) != nil || len(r.asked) != 0 {
			t.Errorf("%v: root is refused or asked %q", c.conf, r.asked)
		}
	}
	var pe *ParamError
	r := &recorder{granted: with("/mapping/pci/gpu:Mapping.Use")}
	if err := CheckCreateDevicePerm(r.perm(false), map[string]string{"hostpci0": "mapping=gpu,romfile=x"}); !errors.As(err, &pe) || pe.Param != "hostpci0" {
		t.Fatalf("romfile: %v is not a parameter error of hostpci0", err)
	}
}
