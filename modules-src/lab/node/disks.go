package node

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/systool"
)

// Disk is a block device a node sees in its /dev. It is a real block device
// (a loop device over a sparse file), so the real blkid, wipefs and friends
// read real signatures from it (Z3).
type Disk struct {
	// Name in the node's /dev: "nvme0n1", "sdb".
	Name string
	// Size is the apparent size; the backing file is sparse.
	Size int64
	// Format is what the disk carries at lab creation: "" (blank),
	// "ext4" (a filesystem) or "gpt" (a partition table with one partition).
	Format string
	// IDs are the /dev/disk/by-id names of the whole disk, as udev would
	// create them (Z2): for NVMe an nvme-eui.* link, the model_serial link and
	// its "_1" namespace duplicate. A partitioned disk also gets "-part1" links.
	IDs []string
}

// PartName is the device name of the disk's first partition.
func (d Disk) PartName() string {
	if strings.HasPrefix(d.Name, "nvme") {
		return d.Name + "p1"
	}
	return d.Name + "1"
}

// DefaultDisks are a node's data disks, numbered so that every node's
// identifiers differ (as serial numbers do): one blank NVMe for the pool, one
// disk with an old ext4 filesystem and one with a GPT partition table, both of
// which a careful module must refuse to overwrite (Z3).
func DefaultDisks(index int) []Disk {
	serial := fmt.Sprintf("S5GXNF0W%06dK", 412300+index)
	model := "Samsung_SSD_980_PRO_512GB"
	eui := fmt.Sprintf("002538b%09x", 0x1a2b3c400+index)
	return []Disk{
		{Name: "nvme0n1", Size: 512110190592, IDs: []string{
			"nvme-eui." + eui,
			"nvme-" + model + "_" + serial,
			"nvme-" + model + "_" + serial + "_1",
		}},
		{Name: "sdb", Size: 64 << 30, Format: "ext4", IDs: []string{
			fmt.Sprintf("ata-WDC_WD10EZEX-08WN4A0_WD-WCC6Y%07d", 5550000+index),
			fmt.Sprintf("wwn-0x50014ee2%08x", 0xb1c2d300+index),
		}},
		{Name: "sdc", Size: 32 << 30, Format: "gpt", IDs: []string{
			fmt.Sprintf("ata-KINGSTON_SA400S37240G_50026B7784%06X", 0xA1B200+index),
			fmt.Sprintf("wwn-0x50026b7784%06x", 0xa1b200+index),
		}},
	}
}

// attached is a disk bound to a loop device, with the device numbers the
// node's /dev needs.
type attached struct {
	disk           Disk
	loop, partLoop string // /dev/loopN on the host, for the disk and its partition
	dev, part      string // "major:minor" of the disk and its first partition ("" if none)
}

// createImage writes the sparse backing file and its initial content.
func createImage(ctx context.Context, path string, d Disk) error {
	if _, err := os.Stat(path); err == nil {
		return nil // a restarted node keeps its disks
	}
	f, err := os.OpenFile(path+".new", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("creating disk image %s: %w", path, err)
	}
	if err := f.Truncate(d.Size); err != nil {
		f.Close()
		return fmt.Errorf("sizing disk image %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("creating disk image %s: %w", path, err)
	}
	switch d.Format {
	case "":
	case "ext4":
		mkfs, err := systool.Command(ctx, "mkfs.ext4", "-q", "-F", "-L", "olddata",
			"-E", "lazy_itable_init=1,lazy_journal_init=1", path+".new")
		if err != nil {
			return err
		}
		if out, err := mkfs.CombinedOutput(); err != nil {
			return fmt.Errorf("writing an ext4 signature on %s: %w: %s", d.Name, err, out)
		}
	case "gpt":
		if err := writeGPT(path+".new", d.Size); err != nil {
			return fmt.Errorf("writing a GPT on %s: %w", d.Name, err)
		}
	default:
		return fmt.Errorf("disk %s: unknown format %q (want \"\", \"ext4\" or \"gpt\")", d.Name, d.Format)
	}
	return os.Rename(path+".new", path)
}

// writeGPT writes a GPT (protective MBR, primary and backup headers) with
// one Linux partition spanning the disk: what a previous installation leaves
// behind. sfdisk is not always installed, and the format is small enough to
// write here.
func writeGPT(path string, size int64) error {
	const sector = 512
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	last := uint64(size/sector) - 1
	firstUsable, lastUsable := uint64(34), last-33
	partStart, partEnd := gptPartition(size)

	mbr := make([]byte, sector)
	entry := mbr[446:]
	copy(entry, []byte{0x00, 0x00, 0x02, 0x00, 0xEE, 0xFF, 0xFF, 0xFF})
	binary.LittleEndian.PutUint32(entry[8:], 1)
	binary.LittleEndian.PutUint32(entry[12:], uint32(min(last, 0xFFFFFFFF)))
	mbr[510], mbr[511] = 0x55, 0xAA

	entries := make([]byte, 128*128)
	linuxFS := guidBytes(0x0FC63DAF, 0x8483, 0x4772, [8]byte{0x8E, 0x79, 0x3D, 0x69, 0xD8, 0x47, 0x7D, 0xE4})
	copy(entries[0:], linuxFS[:])
	if _, err := rand.Read(entries[16:32]); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(entries[32:], uint64(partStart/sector))
	binary.LittleEndian.PutUint64(entries[40:], uint64(partEnd/sector)-1)
	for i, r := range "old-data" {
		binary.LittleEndian.PutUint16(entries[56+2*i:], uint16(r))
	}
	entriesCRC := crc32.ChecksumIEEE(entries)
	var diskGUID [16]byte
	if _, err := rand.Read(diskGUID[:]); err != nil {
		return err
	}
	header := func(current, backup, entriesLBA uint64) []byte {
		h := make([]byte, sector)
		copy(h, "EFI PART")
		binary.LittleEndian.PutUint32(h[8:], 0x00010000)
		binary.LittleEndian.PutUint32(h[12:], 92)
		binary.LittleEndian.PutUint64(h[24:], current)
		binary.LittleEndian.PutUint64(h[32:], backup)
		binary.LittleEndian.PutUint64(h[40:], firstUsable)
		binary.LittleEndian.PutUint64(h[48:], lastUsable)
		copy(h[56:], diskGUID[:])
		binary.LittleEndian.PutUint64(h[72:], entriesLBA)
		binary.LittleEndian.PutUint32(h[80:], 128)
		binary.LittleEndian.PutUint32(h[84:], 128)
		binary.LittleEndian.PutUint32(h[88:], entriesCRC)
		binary.LittleEndian.PutUint32(h[16:], crc32.ChecksumIEEE(h[:92]))
		return h
	}
	writes := []struct {
		lba  uint64
		data []byte
	}{
		{0, mbr}, {1, header(1, last, 2)}, {2, entries},
		{last - 32, entries}, {last, header(last, 1, last-32)},
	}
	for _, w := range writes {
		if _, err := f.WriteAt(w.data, int64(w.lba)*sector); err != nil {
			return err
		}
	}
	return f.Close()
}

// gptPartition is the byte range [start, end) of the one partition writeGPT
// creates: from 1 MiB to the last usable sector.
func gptPartition(size int64) (start, end int64) {
	const sector = 512
	return 2048 * sector, (size/sector - 33) * sector
}

// guidBytes encodes a GUID in the mixed-endian layout GPT uses.
func guidBytes(a uint32, b, c uint16, d [8]byte) [16]byte {
	var g [16]byte
	binary.LittleEndian.PutUint32(g[0:], a)
	binary.LittleEndian.PutUint16(g[4:], b)
	binary.LittleEndian.PutUint16(g[6:], c)
	copy(g[8:], d[:])
	return g
}

// attach binds the image to a free loop device and reads the device numbers.
// The partition of a "gpt" disk is a second loop device over the partition's
// byte range: this machine's kernel has no partition-table support
// (CONFIG_EFI_PARTITION unset), so losetup --partscan would find nothing, and
// a ranged loop device is the same bytes the kernel would expose.
func attach(ctx context.Context, image string, d Disk) (attached, error) {
	a := attached{disk: d}
	var err error
	if a.loop, a.dev, err = loopDevice(ctx, image, d.Name); err != nil {
		return attached{}, err
	}
	if d.Format == "gpt" {
		start, end := gptPartition(d.Size)
		a.partLoop, a.part, err = loopDevice(ctx, image, d.PartName(),
			"--offset", fmt.Sprint(start), "--sizelimit", fmt.Sprint(end-start))
		if err != nil {
			_ = detach(a.loop)
			return attached{}, err
		}
	}
	return a, nil
}

// loopDevice attaches image (or a range of it) and returns the loop device
// and its "major:minor".
func loopDevice(ctx context.Context, image, name string, extra ...string) (string, string, error) {
	args := append([]string{"--find", "--show"}, extra...)
	cmd, err := systool.Command(ctx, "losetup", append(args, image)...)
	if err != nil {
		return "", "", err
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("attaching disk %s to a loop device (is the loop module available?): %w: %s", name, err, bytes.TrimSpace(out))
	}
	loop := strings.TrimSpace(string(out))
	dev, err := readDevNumber(filepath.Join("/sys/class/block", filepath.Base(loop), "dev"))
	if err != nil {
		_ = detach(loop)
		return "", "", err
	}
	return loop, dev, nil
}

func readDevNumber(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the device number: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func detach(loop string) error {
	cmd, err := systool.Command(context.Background(), "losetup", "--detach", loop)
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("detaching %s: %w: %s", loop, err, bytes.TrimSpace(out))
	}
	return nil
}

// LoopsUnder lists the loop devices whose backing file lies under dir.
func LoopsUnder(dir string) ([]string, error) {
	cmd, err := systool.Command(context.Background(), "losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE")
	if err != nil {
		return nil, err
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing loop devices: %w", err)
	}
	prefix := filepath.Clean(dir) + "/"
	var loops []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, back, ok := strings.Cut(sc.Text(), " ")
		if ok && strings.HasPrefix(back, prefix) {
			loops = append(loops, name)
		}
	}
	return loops, nil
}

// DetachLoopsUnder detaches every loop device backed by a file under dir: the
// clean-up after a crash, when no Node is left to remember its disks.
func DetachLoopsUnder(dir string) error {
	loops, err := LoopsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range loops {
		if err := detach(l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
