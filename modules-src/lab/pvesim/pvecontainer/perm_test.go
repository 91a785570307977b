package pvecontainer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fakePerm grants the privileges in have and records every check asked.
type fakePerm struct {
	have  map[string]bool // "VM.Config.Disk", "nopool:VM.Config.Options", "/storage/x:Datastore.AllocateSpace", "vol:<volid>", "vnet:<bridge>/<tag>/<trunks>"
	asked []string
}

func (f *fakePerm) ask(what string) error {
	f.asked = append(f.asked, what)
	if f.have[what] {
		return nil
	}
	return &PermError{"missing " + what}
}

func (f *fakePerm) perm() Perm {
	return Perm{
		VM:       func(privs ...string) error { return f.ask(strings.Join(privs, ",")) },
		VMNoPool: func(privs ...string) error { return f.ask("nopool:" + strings.Join(privs, ",")) },
		Check:    func(path, priv string) error { return f.ask(path + ":" + priv) },
		Volume:   func(volid string) error { return f.ask("vol:" + volid) },
		Vnet:     func(b, tag, trunks string) error { return f.ask(fmt.Sprintf("vnet:%s/%s/%s", b, tag, trunks)) },
	}
}

// recordOnly wraps p's checks to record what is asked and grant it.
func recordOnly(f *fakePerm, p Perm) (vm, vmNoPool func(...string) error, check func(string, string) error, vol func(string) error, vnet func(string, string, string) error) {
	ok := func(error) error { return nil }
	return func(privs ...string) error { return ok(p.VM(privs...)) },
		func(privs ...string) error { return ok(p.VMNoPool(privs...)) },
		func(path, priv string) error { return ok(p.Check(path, priv)) },
		func(v string) error { return ok(p.Volume(v)) },
		func(b, tag, tr string) error { return ok(p.Vnet(b, tag, tr)) }
}

func grant(privs ...string) *fakePerm {
	f := &fakePerm{have: map[string]bool{}}
	for _, p := range privs {
		f.have[p] = true
	}
	return f
}

// check_ct_modify_config_perm's table: each option asks its privilege,
// and the branches that look at the value ask what the value needs.
func TestCheckModifyConfigPerm(t *testing.T) {
	for _, c := range []struct {
		name     string
		old, new map[string]string
		dels     []string
		unpriv   bool
		want     []string // the checks asked, in order
		errWant  string   // "" when every asked check is granted
	}{
		{name: "cpu", new: map[string]string{"cores": "2", "cpulimit": "1", "cpuunits": "10"}, want: []string{"VM.Config.CPU", "VM.Config.CPU", "VM.Config.CPU"}},
		{name: "memory", new: map[string]string{"memory": "1", "swap": "1"}, want: []string{"VM.Config.Memory", "VM.Config.Memory"}},
		{name: "network", new: map[string]string{"hostname": "a", "nameserver": "b", "searchdomain": "c"}, want: []string{"VM.Config.Network", "VM.Config.Network", "VM.Config.Network"}},
		{name: "options", new: map[string]string{"onboot": "1"}, want: []string{"VM.Config.Options"}},
		{name: "tags without the pool", new: map[string]string{"tags": "a"}, want: []string{"nopool:VM.Config.Options"}},
		{name: "new disk", new: map[string]string{"mp0": "fast:8,mp=/a"}, want: []string{"VM.Config.Disk", "/storage/fast:Datastore.AllocateSpace"}},
		{name: "existing volume", new: map[string]string{"rootfs": "local:100/vm-100-disk-0.raw"}, want: []string{"VM.Config.Disk", "vol:local:100/vm-100-disk-0.raw"}},
		{name: "deleted mount point", dels: []string{"mp0"}, want: []string{"VM.Config.Disk"}},
		{name: "bind mount", new: map[string]string{"mp0": "/srv,mp=/a"}, want: []string{"VM.Config.Disk"}, errWant: "mount point type bind is only allowed for root@pam"},
		{name: "device mount", new: map[string]string{"mp0": "/dev/sdb,mp=/a"}, want: []string{"VM.Config.Disk"}, errWant: "mount point type device is only allowed for root@pam"},
		{name: "bare size", new: map[string]string{"rootfs": "8"}, want: []string{"VM.Config.Disk"}, errWant: "Only root can pass arbitrary filesystem paths."},
		{name: "nic old and new", old: map[string]string{"net0": "name=eth0,bridge=vmbr0,tag=5"}, new: map[string]string{"net0": "name=eth0,bridge=vmbr1,trunks=7;8"},
			want: []string{"VM.Config.Network", "vnet:vmbr0/5/", "vnet:vmbr1//7;8"}},
		{name: "device passthrough", new: map[string]string{"dev0": "/dev/null"}, errWant: "configuring device passthrough is only allowed for root@pam"},
		{name: "hookscript", new: map[string]string{"hookscript": "local:snippets/a"}, errWant: "changing the hookscript is only allowed for root@pam"},
		{name: "privileged features", new: map[string]string{"features": "nesting=1"}, errWant: "changing feature flags for privileged container is only allowed for root@pam"},
		{name: "nesting alone", new: map[string]string{"features": "nesting=1"}, unpriv: true, want: []string{"VM.Allocate"}},
		{name: "other flag", new: map[string]string{"features": "keyctl=1"}, unpriv: true, errWant: "changing feature flags (except nesting) is only allowed for root@pam"},
		{name: "nesting changed", old: map[string]string{"features": "keyctl=1,nesting=0"}, new: map[string]string{"features": "keyctl=1,nesting=1"}, unpriv: true, want: []string{"VM.Allocate"}},
		{name: "other changed", old: map[string]string{"features": "keyctl=1"}, new: map[string]string{"features": "keyctl=0"}, unpriv: true, errWant: "changing feature flags (except nesting) is only allowed for root@pam"},
		{name: "unchanged", old: map[string]string{"features": "keyctl=1"}, new: map[string]string{"features": "keyctl=1"}, unpriv: true},
		{name: "delete nesting", old: map[string]string{"features": "nesting=1"}, dels: []string{"features"}, unpriv: true, want: []string{"VM.Allocate"}},
		{name: "delete other", old: map[string]string{"features": "fuse=1"}, dels: []string{"features"}, unpriv: true, errWant: "changing feature flags (except nesting) is only allowed for root@pam"},
		{name: "nesting and another", new: map[string]string{"features": "keyctl=1,nesting=1"}, unpriv: true, errWant: "changing feature flags (except nesting) is only allowed for root@pam"},
		{name: "delete nesting and another", old: map[string]string{"features": "keyctl=1,nesting=1"}, dels: []string{"features"}, unpriv: true, errWant: "changing feature flags (except nesting) is only allowed for root@pam"},
		// A delete looks at the old flags alone, whatever newConf holds.
		{name: "delete with the same flags set", old: map[string]string{"features": "nesting=1"}, new: map[string]string{"features": "nesting=1"}, dels: []string{"features"}, unpriv: true, want: []string{"VM.Allocate"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakePerm{} // grants nothing: record the checks, then answer nil
			p := f.perm()
			p.VM, p.VMNoPool, p.Check, p.Volume, p.Vnet = recordOnly(f, p)
			err := CheckModifyConfigPerm(p, c.old, c.new, c.dels, c.unpriv)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.errWant {
				t.Errorf("error %q, want %q", got, c.errWant)
			}
			if !slices.Equal(f.asked, c.want) {
				t.Errorf("asked %q, want %q", f.asked, c.want)
			}
			if c.errWant != "" && !strings.HasPrefix(c.errWant, "Only root") {
				if pe := (*PermError)(nil); !errors.As(err, &pe) {
					t.Errorf("%T is no 403", err)
				}
			}
		})
	}
}

// A refused check stops the walk with its 403, and root@pam asks nothing.
func TestCheckModifyConfigPermRefusalAndRoot(t *testing.T) {
	f := grant("VM.Config.Disk")
	err := CheckModifyConfigPerm(f.perm(), nil, map[string]string{"mp0": "fast:8,mp=/a", "rootfs": "local:4"}, nil, true)
	if err == nil || err.Error() != "missing /storage/fast:Datastore.AllocateSpace" {
		t.Errorf("got %v, want the storage refusal", err)
	}
	p := grant().perm()
	p.Root = true
	if err := CheckModifyConfigPerm(p, nil, map[string]string{"dev0": "/dev/null", "hookscript": "x"}, []string{"rootfs"}, false); err != nil {
		t.Errorf("root@pam refused: %v", err)
	}
}
