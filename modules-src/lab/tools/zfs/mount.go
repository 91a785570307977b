package zfs

import (
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
)

// zfs mount / zfs unmount (zfs_main.c share_mount / unshare_unmount), so a
// dataset whose mount failed (a non-empty directory with overlay=off) can be
// produced and repaired as on a real node:
//
//	zfs mount                       list mounted datasets
//	zfs mount [-O] [-f] -a | fs     mount (-O: over a non-empty directory)
//	zfs unmount [-f] -a | fs | dir  unmount (also "zfs umount")
//
// Messages are reconstructions of OpenZFS 2.x's (libzfs/zfs_main.c wording
// as remembered, not checked against its sources), as is the listing's
// "%-30s  %s" layout. A mount only creates the directory (nothing of the
// dataset is shown in it, and nothing under it is hidden).

// zmount is `zfs mount`.
func (t *Tool) zmount(args []string) error {
	opts, rest, err := cli.Getopt(args, "vOao:fl")
	if err != nil {
		return zusage(err.Error())
	}
	all, overlay := false, false
	for _, o := range opts {
		switch o.Name {
		case 'a':
			all = true
		case 'O':
			overlay = true
		}
	}
	if !all && len(rest) == 0 {
		return t.listMounted()
	}
	if all && len(rest) > 0 {
		return zusage("too many arguments")
	}
	if !all && len(rest) > 1 {
		return zusage("too many arguments")
	}
	return t.update(func(s *State) (bool, error) {
		if all {
			var errs []string
			for _, p := range s.imported() {
				for _, d := range sortedDatasets(p) {
					if s.mounted(p, d) || !s.mountable(p, d) {
						continue
					}
					if err := t.mountWith(s, p, d, overlay); err != nil {
						errs = append(errs, err.Error())
					}
				}
			}
			if len(errs) > 0 {
				return true, fail(1, "%s", strings.Join(errs, "\n"))
			}
			return true, nil
		}
		p, d := s.dataset(rest[0])
		if d == nil {
			return false, fail(1, "cannot open '%s': dataset does not exist", rest[0])
		}
		mp, _ := s.get(p, d, "mountpoint")
		cm, _ := s.get(p, d, "canmount")
		switch {
		case cm.value == "off":
			return false, fail(1, "cannot mount '%s': 'canmount' property is set to 'off'", d.Name)
		case mp.value == "legacy":
			return false, fail(1, "cannot mount '%s': legacy mountpoint\nuse mount(8) to mount this filesystem", d.Name)
		case mp.value == "none":
			return false, fail(1, "cannot mount '%s': no mountpoint set", d.Name)
		case s.mounted(p, d):
			return false, fail(1, "cannot mount '%s': filesystem already mounted", d.Name)
		}
		return true, t.mountWith(s, p, d, overlay)
	})
}

// mountable: what `zfs mount -a` mounts (canmount=on, a path mountpoint).
func (s *State) mountable(p *Pool, d *Dataset) bool {
	mp, _ := s.get(p, d, "mountpoint")
	cm, _ := s.get(p, d, "canmount")
	return cm.value == "on" && strings.HasPrefix(mp.value, "/")
}

func (s *State) mounted(p *Pool, d *Dataset) bool {
	v, _ := s.get(p, d, "mounted")
	return v.value == "yes"
}

// listMounted is `zfs mount` without arguments: "<dataset>  <mountpoint>".
func (t *Tool) listMounted() error {
	return t.update(func(s *State) (bool, error) {
		for _, p := range s.imported() {
			for _, d := range sortedDatasets(p) {
				if s.mounted(p, d) {
					mp, _ := s.get(p, d, "mountpoint")
					t.Env.Outf("%-30s  %s\n", d.Name, mp.value)
				}
			}
		}
		return false, nil
	})
}

// zunmount is `zfs unmount` / `zfs umount`.
func (t *Tool) zunmount(args []string) error {
	opts, rest, err := cli.Getopt(args, "fau")
	if err != nil {
		return zusage(err.Error())
	}
	all := false
	for _, o := range opts {
		if o.Name == 'a' {
			all = true
		}
	}
	switch {
	case all && len(rest) > 0, !all && len(rest) > 1:
		return zusage("too many arguments")
	case !all && len(rest) == 0:
		return zusage("missing filesystem argument")
	}
	return t.update(func(s *State) (bool, error) {
		if all {
			for _, p := range s.imported() {
				for _, d := range sortedDatasets(p) {
					if s.mounted(p, d) {
						d.Unmounted = true
					}
				}
			}
			return true, nil
		}
		arg := rest[0]
		var p *Pool
		var d *Dataset
		if strings.HasPrefix(arg, "/") { // a mountpoint
			for _, ip := range s.imported() {
				for _, id := range ip.Datasets {
					if mp, _ := s.get(ip, id, "mountpoint"); mp.value == strings.TrimRight(arg, "/") && s.mounted(ip, id) {
						p, d = ip, id
					}
				}
			}
			if d == nil {
				return false, fail(1, "cannot unmount '%s': not a mountpoint", arg)
			}
		} else if p, d = s.dataset(arg); d == nil {
			return false, fail(1, "cannot open '%s': dataset does not exist", arg)
		}
		if !s.mounted(p, d) {
			return false, fail(1, "cannot unmount '%s': not currently mounted", d.Name)
		}
		d.Unmounted = true
		return true, nil
	})
}
