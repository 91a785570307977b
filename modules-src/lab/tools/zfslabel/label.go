package zfslabel

import (
	"encoding/binary"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// On-disk layout (vdev_impl.h): four 256 KiB labels, two at the start and two
// at the end of the device (end aligned down to 256 KiB); in each, the nvlist
// lives at 16 KiB (112 KiB long) and the uberblock ring at 128 KiB.
const (
	labelSize      = 256 << 10
	nvlistOffset   = 16 << 10
	nvlistSize     = 112 << 10
	uberOffset     = 128 << 10
	uberMagic      = 0x00bab10c
	spaVersion     = 5000
	MinDeviceBytes = 64 << 20 // SPA_MINDEVSIZE
)

// Pool states written in labels (sys/fs/zfs.h pool_state_t).
const (
	StateActive    = 0
	StateExported  = 1
	StateDestroyed = 2
)

// Label is what one device's labels say.
type Label struct {
	Pool      string
	PoolGUID  uint64
	GUID      uint64 // this leaf vdev
	TopGUID   uint64
	State     uint64
	TXG       uint64
	Hostname  string
	Path      string
	Ashift    uint64
	VdevType  string // disk, file, mirror, raidz
	Nparity   uint64
	Children  []Child // leaves of the top-level vdev (for mirror/raidz)
	Asize     uint64
	Timestamp time.Time
}

// Child is a leaf of a mirror or raidz top-level vdev.
type Child struct {
	GUID uint64
	Path string
	Type string // disk or file
}

// Size returns the usable size of a block device or regular file.
func Size(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if st.Mode()&os.ModeDevice == 0 {
		return st.Size(), nil
	}
	n, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
	if err != nil {
		return 0, fmt.Errorf("read size of %s: %w", f.Name(), err)
	}
	return int64(n), nil
}

func leafType(t string) string {
	if t == "" {
		return "disk"
	}
	return t
}

func (l *Label) nvlist() []Pair {
	leaf := func(guid uint64, path, typ string, id uint64) []Pair {
		p := []Pair{{"type", leafType(typ)}, {"id", id}, {"guid", guid}, {"path", path}}
		if leafType(typ) == "disk" {
			p = append(p, Pair{"whole_disk", uint64(1)})
		}
		return append(p, Pair{"create_txg", uint64(4)})
	}
	var tree []Pair
	switch l.VdevType {
	case "mirror", "raidz":
		tree = []Pair{{"type", l.VdevType}, {"id", uint64(0)}, {"guid", l.TopGUID}}
		if l.VdevType == "raidz" {
			tree = append(tree, Pair{"nparity", l.Nparity})
		}
		tree = append(tree, Pair{"metaslab_array", uint64(256)}, Pair{"metaslab_shift", uint64(29)},
			Pair{"ashift", l.Ashift}, Pair{"asize", l.Asize}, Pair{"is_log", uint64(0)}, Pair{"create_txg", uint64(4)})
		var kids [][]Pair
		for i, c := range l.Children {
			kids = append(kids, leaf(c.GUID, c.Path, c.Type, uint64(i)))
		}
		tree = append(tree, Pair{"children", kids})
	default:
		tree = leaf(l.GUID, l.Path, l.VdevType, 0)
		tree = append(tree[:len(tree)-1], Pair{"metaslab_array", uint64(256)}, Pair{"metaslab_shift", uint64(29)},
			Pair{"ashift", l.Ashift}, Pair{"asize", l.Asize}, Pair{"is_log", uint64(0)}, Pair{"create_txg", uint64(4)})
	}
	// Order as written by ZFS: blkid ≤ 2.40 stops after name, pool_guid and guid.
	return []Pair{
		{"version", uint64(spaVersion)},
		{"name", l.Pool},
		{"state", l.State},
		{"txg", l.TXG},
		{"pool_guid", l.PoolGUID},
		{"errata", uint64(0)},
		{"hostid", uint64(0)},
		{"hostname", l.Hostname},
		{"top_guid", l.TopGUID},
		{"guid", l.GUID},
		{"vdev_children", uint64(1)},
		{"vdev_tree", tree},
		{"features_for_read", []Pair{}},
	}
}

func labelOffsets(size int64) []int64 {
	end := size - size%labelSize
	return []int64{0, labelSize, end - 2*labelSize, end - labelSize}
}

// Write puts the four labels on the device at path.
func Write(path string, l *Label) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open %s to write the ZFS label: %w", path, err)
	}
	defer f.Close()
	size, err := Size(f)
	if err != nil {
		return err
	}
	if size < MinDeviceBytes {
		return fmt.Errorf("%s is smaller than %d bytes", path, MinDeviceBytes)
	}
	nv, err := Encode(l.nvlist())
	if err != nil {
		return err
	}
	if len(nv) > nvlistSize {
		return fmt.Errorf("label nvlist too large (%d bytes)", len(nv))
	}
	buf := make([]byte, labelSize)
	copy(buf[nvlistOffset:], nv)
	// Uberblocks in 4 KiB slots (ashift 12); older blkid wants 4 magics in all.
	slot := int64(1) << max(l.Ashift, 10)
	ts := uint64(l.Timestamp.Unix())
	for i := int64(0); i < 4; i++ {
		off := uberOffset + ((int64(l.TXG)+i)%(int64(128<<10)/slot))*slot
		ub := buf[off:]
		binary.LittleEndian.PutUint64(ub[0:], uberMagic)
		binary.LittleEndian.PutUint64(ub[8:], spaVersion)
		binary.LittleEndian.PutUint64(ub[16:], l.TXG+uint64(i))
		binary.LittleEndian.PutUint64(ub[24:], l.PoolGUID+l.GUID)
		binary.LittleEndian.PutUint64(ub[32:], ts)
	}
	for _, off := range labelOffsets(size) {
		if _, err := f.WriteAt(buf, off); err != nil {
			return fmt.Errorf("write ZFS label to %s: %w", path, err)
		}
	}
	return f.Sync()
}

// Read returns the label of the device at path, or nil when it has none.
func Read(path string) (*Label, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := Size(f)
	if err != nil || size < MinDeviceBytes {
		return nil, err
	}
	buf := make([]byte, nvlistSize)
	for _, off := range labelOffsets(size) {
		if _, err := f.ReadAt(buf, off+nvlistOffset); err != nil {
			continue
		}
		m, err := Decode(buf)
		if err != nil {
			continue
		}
		name, _ := m["name"].(string)
		if name == "" {
			continue
		}
		l := &Label{Pool: name}
		l.PoolGUID, _ = m["pool_guid"].(uint64)
		l.GUID, _ = m["guid"].(uint64)
		l.TopGUID, _ = m["top_guid"].(uint64)
		l.State, _ = m["state"].(uint64)
		l.TXG, _ = m["txg"].(uint64)
		l.Hostname, _ = m["hostname"].(string)
		return l, nil
	}
	return nil, nil
}

// Wipe zeroes the four label areas (what `zpool labelclear` does).
func Wipe(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := Size(f)
	if err != nil {
		return err
	}
	zero := make([]byte, labelSize)
	for _, off := range labelOffsets(size) {
		if _, err := f.WriteAt(zero, off); err != nil {
			return err
		}
	}
	return f.Sync()
}
