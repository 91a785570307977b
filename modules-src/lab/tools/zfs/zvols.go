package zfs

import (
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
)

// Volumes (zvols), snapshots and clones: what ZFSPoolPlugin drives for
// guest disks — `zfs create [-s] [-b bs] -V size pool/vm-100-disk-0`,
// `zfs create -o refquota=… pool/subvol-100-disk-0`, `zfs rename` and
// `zfs snapshot …@__base__` for templates, `zfs clone` for linked clones,
// `zfs set volsize=` for a resize, `zfs destroy [-r]`. No data is kept:
// sizes are accounting only. The refusals of destroy are OpenZFS's
// (zfs_main.c destroy_check_dependent); those of snapshot, clone and rename
// are reconstructions in libzfs's "cannot <verb> '<name>': <reason>" form.

// defaultVolBlockSize is OpenZFS ≥ 2.2's default volblocksize (16K; PVE 8.1+
// and 9 ship 2.2/2.3).
const defaultVolBlockSize = 16 << 10

// kind is the dataset's type as `zfs get type` prints it.
func (d *Dataset) kind() string {
	if d.Type == "" {
		return "filesystem"
	}
	return d.Type
}

// volReservation is libzfs's zvol_volsize_to_reservation (lib/libzfs/libzfs_dataset.c) for one copy on a
// non-raidz pool: the volume's size plus the worst case of its indirect
// blocks (two copies of metadata), which is the refreservation a
// non-sparse zvol gets.
func volReservation(volsize, blocksize uint64) uint64 {
	const dnodesPerLevel = 1 << (17 - 7) // DN_MAX_INDBLKSHIFT - SPA_BLKPTRSHIFT
	nblocks := volsize / blocksize
	numdb := uint64(7)
	for nblocks > 1 {
		nblocks += dnodesPerLevel - 1
		nblocks /= dnodesPerLevel
		numdb += nblocks
	}
	numdb *= 2 // MIN(SPA_DVAS_PER_BP, copies + 1)
	return volsize + numdb<<17
}

// referenced: no data is ever written, so every dataset references what a
// fresh one does (a zvol a little less, as an empty zvol shows 56K).
func (d *Dataset) referenced() uint64 {
	if d.Type == "volume" {
		return 56 << 10
	}
	if d.Type == "snapshot" {
		return 0
	}
	return referFresh
}

// refreservation of d in bytes (0 for none).
func (d *Dataset) refreservation() uint64 {
	v := d.Props["refreservation"]
	if v == "" || v == "none" {
		return 0
	}
	n, _ := parseSize(v)
	return n
}

// used is what `zfs list` shows as USED: the dataset's own referenced data
// or its refreservation (whichever is larger), plus its descendants'
// (snapshots of a fresh dataset use nothing); the pool root also counts the
// pool's own metadata.
func (s *State) used(p *Pool, d *Dataset) uint64 {
	if d.Type == "snapshot" {
		return 0
	}
	own := max(d.referenced(), d.refreservation())
	if d.Name == p.Name {
		own = usedFresh
	}
	for _, c := range p.Datasets {
		if c.Type != "snapshot" && parent(c.Name) == d.Name {
			own += s.used(p, c)
		}
	}
	return own
}

// avail is AVAIL: the pool's free space less what its datasets use; a
// zvol's own unused refreservation is available to it.
func (s *State) avail(p *Pool, d *Dataset) uint64 {
	root := &Dataset{Name: p.Name}
	used := s.used(p, root) - usedFresh
	free := p.Avail()
	if used > free {
		free = 0
	} else {
		free -= used
	}
	if d.Type == "snapshot" {
		return 0
	}
	if r := d.refreservation(); r > d.referenced() {
		free += r - d.referenced()
	}
	return free
}

// typeFilter parses `zfs list -t`: filesystem, volume, snapshot (snap), all.
func typeFilter(v string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, t := range strings.Split(v, ",") {
		switch t {
		case "filesystem", "volume", "snapshot":
			out[t] = true
		case "snap":
			out["snapshot"] = true
		case "all":
			out["filesystem"], out["volume"], out["snapshot"] = true, true, true
		case "bookmark":
		default:
			return nil, zusage("invalid type '" + t + "'")
		}
	}
	return out, nil
}

// zsnapshot is `zfs snapshot [-r] ds@snap…`.
func (t *Tool) zsnapshot(args []string) error {
	_, rest, err := cli.Getopt(args, "ro:")
	if err != nil || len(rest) == 0 {
		return zusage("missing snapshot argument")
	}
	return t.update(func(s *State) (bool, error) {
		for _, n := range rest {
			ds, snap, ok := strings.Cut(n, "@")
			if !ok || snap == "" {
				return false, fail(1, "cannot create snapshot '%s': invalid character '@' in name", n)
			}
			p, d := s.dataset(ds)
			if d == nil {
				return false, fail(1, "cannot open '%s': dataset does not exist", ds)
			}
			if _, x := s.dataset(n); x != nil {
				return false, fail(1, "cannot create snapshot '%s': dataset already exists", n)
			}
			p.Datasets = append(p.Datasets, &Dataset{Name: n, Type: "snapshot", Props: map[string]string{}, Created: t.Now()})
		}
		return true, nil
	})
}

// zclone is `zfs clone [-p] [-o k=v] snapshot target`: a dataset of the
// snapshot's type whose origin is the snapshot.
func (t *Tool) zclone(args []string) error {
	opts, rest, err := cli.Getopt(args, "po:")
	if err != nil || len(rest) != 2 {
		return zusage("missing source dataset argument")
	}
	props := map[string]string{}
	for _, o := range opts {
		if k, v, ok := strings.Cut(o.Value, "="); ok && o.Name == 'o' {
			props[k] = v
		}
	}
	src, dst := rest[0], rest[1]
	return t.update(func(s *State) (bool, error) {
		p, snap := s.dataset(src)
		if snap == nil || snap.Type != "snapshot" {
			return false, fail(1, "cannot open '%s': operation only applies to snapshots", src)
		}
		if _, x := s.dataset(dst); x != nil {
			return false, fail(1, "cannot create '%s': dataset already exists", dst)
		}
		if _, par := s.dataset(parent(dst)); par == nil {
			return false, fail(1, "cannot create '%s': parent does not exist", dst)
		}
		_, origin := s.dataset(strings.SplitN(src, "@", 2)[0])
		nd := &Dataset{Name: dst, Type: origin.Type, Origin: src, BlockSize: origin.BlockSize, Props: props, Created: t.Now()}
		if origin.Type == "volume" {
			nd.Props["volsize"] = origin.Props["volsize"] // a clone is not reserved
		}
		p.Datasets = append(p.Datasets, nd)
		if nd.Type == "" {
			_ = t.mount(s, p, nd)
		}
		return true, nil
	})
}

// zrename is `zfs rename old new` within a pool; its snapshots follow.
func (t *Tool) zrename(args []string) error {
	_, rest, err := cli.Getopt(args, "fpu")
	if err != nil || len(rest) != 2 {
		return zusage("missing target dataset argument")
	}
	from, to := rest[0], rest[1]
	return t.update(func(s *State) (bool, error) {
		p, d := s.dataset(from)
		if d == nil {
			return false, fail(1, "cannot open '%s': dataset does not exist", from)
		}
		if q, _ := s.dataset(to); q != p {
			return false, fail(1, "cannot rename to '%s': datasets must be within same pool", to)
		}
		if _, x := s.dataset(to); x != nil {
			return false, fail(1, "cannot rename to '%s': dataset already exists", to)
		}
		for _, c := range p.Datasets {
			switch {
			case c == d:
				c.Name = to
			case strings.HasPrefix(c.Name, from+"@") || strings.HasPrefix(c.Name, from+"/"):
				c.Name = to + c.Name[len(from):]
			}
			if strings.HasPrefix(c.Origin, from+"@") {
				c.Origin = to + c.Origin[len(from):]
			}
		}
		return true, nil
	})
}
