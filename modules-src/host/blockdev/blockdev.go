// Package blockdev finds stable names for block devices and probes them for
// existing signatures before anything is written to them.
package blockdev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gopve/proxmox/modules-src/host"
)

// ByIDDir is where udev keeps the stable device links.
const ByIDDir = "/dev/disk/by-id"

// partLink matches partition links (…-part1), which never name a whole disk.
var partLink = regexp.MustCompile(`-part[0-9]+$`)

// Device is a block device known by its kernel name and its stable link.
type Device struct {
	Given  string `json:"given"`  // what the user wrote
	Kernel string `json:"kernel"` // /dev/nvme0n1
	ByID   string `json:"by_id"`  // /dev/disk/by-id/nvme-eui.…
}

// Canonical resolves any path to a device (kernel name or link) to its
// kernel name, e.g. /dev/disk/by-id/nvme-eui.x → /dev/nvme0n1.
func Canonical(root host.Root, dev string) (string, error) {
	if !strings.HasPrefix(dev, "/dev/") {
		return "", fmt.Errorf("device %q: expected a path under /dev (e.g. /dev/nvme0n1 or %s/…)", dev, ByIDDir)
	}
	real, err := filepath.EvalSymlinks(root.Path(dev))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("device %s does not exist on this node", dev)
	}
	if err != nil {
		return "", fmt.Errorf("device %s: %w", dev, err)
	}
	logical, ok := root.Logical(real)
	if !ok {
		return "", fmt.Errorf("device %s resolves outside the node's filesystem (%s)", dev, real)
	}
	return logical, nil
}

// rank orders link names: the ones that never change with firmware, slot or
// driver first (EUI/WWN), then model_serial names.
func rank(name string) int {
	switch {
	case strings.HasPrefix(name, "nvme-eui."), strings.HasPrefix(name, "nvme-nguid."):
		return 0
	case strings.HasPrefix(name, "wwn-"):
		return 1
	case strings.HasPrefix(name, "nvme-"), strings.HasPrefix(name, "ata-"), strings.HasPrefix(name, "scsi-"):
		return 2
	default:
		return 3
	}
}

// Links lists the whole-device links in /dev/disk/by-id that point at the
// kernel device, best first. Partition links and the "_1" namespace
// duplicates some NVMe drives get are skipped (Z2).
func Links(root host.Root, kernel string) ([]string, error) {
	entries, err := os.ReadDir(root.Path(ByIDDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", ByIDDir, err)
	}
	var links []string
	for _, e := range entries {
		name := e.Name()
		if partLink.MatchString(name) || strings.HasSuffix(name, "_1") {
			continue
		}
		target, err := Canonical(root, path.Join(ByIDDir, name))
		if err != nil || target != kernel {
			continue // dangling links are udev's business, not ours
		}
		links = append(links, path.Join(ByIDDir, name))
	}
	sort.Slice(links, func(i, j int) bool {
		ri, rj := rank(path.Base(links[i])), rank(path.Base(links[j]))
		if ri != rj {
			return ri < rj
		}
		return links[i] < links[j]
	})
	return links, nil
}

// Resolve turns what the user gave into a Device. A by-id link the user chose
// is kept as given (it is already stable); a kernel name gets the best link.
func Resolve(root host.Root, given string) (Device, error) {
	kernel, err := Canonical(root, given)
	if err != nil {
		return Device{}, err
	}
	d := Device{Given: given, Kernel: kernel}
	if dir, name := path.Split(given); path.Clean(dir) == ByIDDir {
		if partLink.MatchString(name) {
			return d, fmt.Errorf("device %s is a partition link; give the whole disk", given)
		}
		d.ByID = given
		return d, nil
	}
	if disk, ok := partitionOf(root, kernel); ok {
		whole := "the whole disk"
		if disk != "" {
			whole += " (" + disk + ")"
		}
		return d, fmt.Errorf("device %s is a partition (%s), not a disk; give %s: zpool create partitions whole disks itself", given, kernel, whole)
	}
	links, err := Links(root, kernel)
	if err != nil {
		return d, err
	}
	if len(links) == 0 {
		return d, fmt.Errorf("device %s (%s) has no stable link in %s; pools built on kernel names break when disks are renamed at boot", given, kernel, ByIDDir)
	}
	d.ByID = links[0]
	return d, nil
}

// Signature is what blkid found on a device.
type Signature struct {
	Present bool              `json:"present"`
	Fields  map[string]string `json:"fields,omitempty"` // TYPE, PTTYPE, LABEL, UUID…
}

// Describe names the signature for messages ("zfs_member label \"tank\"").
func (s Signature) Describe() string {
	var parts []string
	for _, k := range []string{"TYPE", "PTTYPE", "LABEL", "USAGE"} {
		if v := s.Fields[k]; v != "" {
			parts = append(parts, strings.ToLower(k)+"="+v)
		}
	}
	if len(parts) == 0 {
		return "an unidentified signature"
	}
	return strings.Join(parts, " ")
}

// Probe asks `blkid -p DEVICE` (low-level probe, bypassing blkid's cache)
// whether the device carries any signature: exit 0 = found, 2 = nothing,
// 8 = ambivalent (several signatures: treated as found) (Z3).
func Probe(ctx context.Context, r host.Runner, dev string) (Signature, error) {
	res, err := r.Run(ctx, host.Command{Name: "blkid", Args: []string{"-p", dev}})
	switch res.ExitCode {
	case 0, 8:
		return Signature{Present: true, Fields: ParseBlkid(res.Stdout)}, nil
	case 2:
		return Signature{}, nil
	}
	return Signature{}, fmt.Errorf("probe %s for signatures: %w", dev, err)
}

var blkidPair = regexp.MustCompile(`([A-Z_]+)="((?:[^"\\]|\\.)*)"`)

// ParseBlkid reads blkid's default output (`/dev/x: KEY="v" KEY2="w"`).
func ParseBlkid(out string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if _, rest, ok := strings.Cut(line, ": "); ok {
			line = rest
		}
		for _, m := range blkidPair.FindAllStringSubmatch(line, -1) {
			fields[m[1]] = strings.ReplaceAll(m[2], `\"`, `"`)
		}
	}
	return fields
}

// partitionOf tells whether kernel is a partition, and of which disk when
// that can be told: the kernel marks partitions in
// /sys/class/block/NAME/partition, and udev names their by-id links after
// the disk's with a -partN suffix.
func partitionOf(root host.Root, kernel string) (disk string, ok bool) {
	if _, err := os.Stat(root.Path(path.Join("/sys/class/block", path.Base(kernel), "partition"))); err == nil {
		ok = true
	}
	entries, err := os.ReadDir(root.Path(ByIDDir))
	if err != nil {
		return "", ok
	}
	for _, e := range entries {
		name := e.Name()
		if !partLink.MatchString(name) {
			continue
		}
		if target, err := Canonical(root, path.Join(ByIDDir, name)); err != nil || target != kernel {
			continue
		}
		ok = true
		if d, err := Canonical(root, path.Join(ByIDDir, partLink.ReplaceAllString(name, ""))); err == nil {
			return d, true
		}
	}
	return "", ok
}
