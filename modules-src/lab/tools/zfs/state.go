// Package zfs implements the lab's `zpool` and `zfs` stand-ins: node-local
// pools and datasets kept in state_dir, real labels on the devices, and the
// output formats and error texts of OpenZFS 2.x as shipped with PVE 8/9.
package zfs

import (
	"crypto/rand"
	"encoding/binary"
	"sort"
	"strings"
	"time"
)

// State is everything the node's ZFS "kernel module" knows.
type State struct {
	Pools []*Pool `json:"pools"`
}

// Pool is one imported or exported pool.
type Pool struct {
	Name     string            `json:"name"`
	GUID     uint64            `json:"guid"`
	Exported bool              `json:"exported,omitempty"`
	Layout   string            `json:"layout"` // stripe, mirror, raidz1, raidz2, raidz3
	Devices  []Device          `json:"devices"`
	TopGUID  uint64            `json:"top_guid"`
	Ashift   int               `json:"ashift"` // of the vdevs: fixed at creation (Z4)
	Props    map[string]string `json:"props"`  // pool properties set locally
	Datasets []*Dataset        `json:"datasets"`
	Created  time.Time         `json:"created"`
	TXG      uint64            `json:"txg"`
}

// Device is a leaf vdev, recorded with the path it was given (Z2).
type Device struct {
	Path     string `json:"path"`
	Resolved string `json:"resolved"`
	Size     int64  `json:"size"`
	GUID     uint64 `json:"guid"`
	File     bool   `json:"file,omitempty"`
}

// Dataset is a filesystem; Props holds the locally set properties only.
type Dataset struct {
	Name string `json:"name"`
	// Type is "volume" for a zvol, "snapshot" for name@snap; empty is a filesystem.
	Type   string `json:"type,omitempty"`
	Origin string `json:"origin,omitempty"` // a clone's snapshot
	// BlockSize is a zvol's volblocksize given with -b (0: the default).
	BlockSize uint64            `json:"block_size,omitempty"`
	Props     map[string]string `json:"props"`
	Created   time.Time         `json:"created"`
	// Unmounted: mounting failed (its directory was not empty).
	Unmounted bool `json:"unmounted,omitempty"`
}

func newGUID() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1 // positive, like ZFS guids printed by zpool get
}

// pool returns the imported pool called name.
func (s *State) pool(name string) *Pool {
	for _, p := range s.Pools {
		if p.Name == name && !p.Exported {
			return p
		}
	}
	return nil
}

func (s *State) imported() []*Pool {
	var out []*Pool
	for _, p := range s.Pools {
		if !p.Exported {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// dataset finds an imported dataset by full name.
func (s *State) dataset(name string) (*Pool, *Dataset) {
	poolName, _, _ := strings.Cut(name, "/")
	p := s.pool(poolName)
	if p == nil {
		return nil, nil
	}
	for _, d := range p.Datasets {
		if d.Name == name {
			return p, d
		}
	}
	return p, nil
}

// Sizes, approximated from the devices the way ZFS derives them.
const (
	labelReserve = 4<<20 + 512<<10 // 4 labels + boot area
	allocFresh   = 444 << 10       // a fresh pool's metadata (≈ what zpool list shows)
	usedFresh    = 432 << 10
	referFresh   = 96 << 10
)

func (p *Pool) asize(d Device) uint64 {
	n := uint64(d.Size) - labelReserve
	return n &^ (16<<20 - 1) // metaslab-ish granularity
}

// Size is the raw pool size zpool list shows (parity included for raidz).
func (p *Pool) Size() uint64 {
	if len(p.Devices) == 0 {
		return 0
	}
	minA := p.asize(p.Devices[0])
	var sum uint64
	for _, d := range p.Devices {
		a := p.asize(d)
		sum += a
		minA = min(minA, a)
	}
	switch {
	case p.Layout == "mirror":
		return minA
	case strings.HasPrefix(p.Layout, "raidz"):
		return minA * uint64(len(p.Devices))
	}
	return sum
}

func (p *Pool) parity() int {
	switch p.Layout {
	case "raidz1":
		return 1
	case "raidz2":
		return 2
	case "raidz3":
		return 3
	}
	return 0
}

// Avail is what zfs list shows as AVAIL for the root dataset: usable space
// minus the 1/32 slop reservation.
func (p *Pool) Avail() uint64 {
	size := p.Size()
	if par := p.parity(); par > 0 {
		size = size / uint64(len(p.Devices)) * uint64(len(p.Devices)-par)
	}
	return size - size/32 - usedFresh
}
