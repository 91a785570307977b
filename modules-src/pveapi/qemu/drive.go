package qemu

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// driveShape follows Drive.pm %drivedesc_base and the bus formats: the
// volume is the default key, `volume` and the old *_length names are
// aliases.
var driveShape = pveformat.Shape{DefaultKey: "file",
	Aliases: map[string]pveformat.Alias{"volume": {To: "file"},
		"bps_rd_length": {To: "bps_rd_max_length"}, "bps_wr_length": {To: "bps_wr_max_length"},
		"iops_rd_length": {To: "iops_rd_max_length"}, "iops_wr_length": {To: "iops_wr_max_length"}},
	Booleans: []string{"backup", "detect_zeroes", "iothread", "replicate", "ro", "scsiblock", "shared", "snapshot", "ssd",
		"pre-enrolled-keys", "ms-cert"},
	Sizes: []string{"size"}}

// Drive is one disk or CD-ROM (ideN, sataN, scsiN, virtioN, efidisk0,
// tpmstate0).
type Drive struct {
	File      string // volume id ("local-lvm:vm-201-disk-0"), "none", "cdrom", a path, or "storage:GiB" to allocate
	Media     string // "" (a disk) or "cdrom"
	Size      int64  // bytes; 0 = not recorded
	Format    string // raw, qcow2, … — absent unless given (issue 17)
	Cache     string
	Discard   string // on, ignore
	IOThread  *bool
	SSD       *bool
	Backup    *bool
	Replicate *bool           // default on: replication takes the disk (H1)
	Other     pveformat.Props // keys not modeled here (aio, serial, efitype, …)
}

// ParseDrive reads a drive value. The size is read with parse_size, as
// parse_drive does.
func ParseDrive(key, value string) (Drive, error) {
	p, err := pveformat.Parse(value, driveShape)
	if err != nil {
		return Drive{}, fmt.Errorf("%s: %w", key, err)
	}
	t := &take{props: p, name: key}
	d := Drive{File: t.str("file"), Media: t.str("media"), Format: t.str("format"), Cache: t.str("cache"),
		Discard: t.str("discard"), IOThread: t.boolPtr("iothread"), SSD: t.boolPtr("ssd"), Backup: t.boolPtr("backup"),
		Replicate: t.boolPtr("replicate")}
	if s := t.str("size"); s != "" {
		if d.Size, err = pveformat.ParseSize(s); err != nil {
			return Drive{}, fmt.Errorf("%s: size: %w", key, err)
		}
	}
	d.Other = t.rest()
	if d.File == "" && t.err == nil {
		t.err = fmt.Errorf("%s: no volume", key)
	}
	return d, t.err
}

// Render prints the drive as print_drive would (volume first, the other
// keys sorted, the size through format_size).
func (d Drive) Render() (string, error) {
	p := &put{}
	p.str("file", d.File)
	p.str("media", d.Media)
	if d.Size > 0 {
		p.str("size", pveformat.FormatSize(d.Size))
	}
	p.str("format", d.Format)
	p.str("cache", d.Cache)
	p.str("discard", d.Discard)
	p.boolPtr("iothread", d.IOThread)
	p.boolPtr("ssd", d.SSD)
	p.boolPtr("backup", d.Backup)
	p.boolPtr("replicate", d.Replicate)
	p.other(d.Other)
	return pveformat.Print(p.props, driveShape)
}

// IsCDROM is drive_is_cdrom.
func (d Drive) IsCDROM() bool { return d.Media == "cdrom" }

var cloudinitRe = regexp.MustCompile(`[:/](?:vm-\d+-)?cloudinit(?:\.(?:raw|qcow|qcow2|qed|vmdk|cloop))?$`)

// IsCloudInit is drive_is_cloudinit: the cloud-init drive, which is a
// CD-ROM regenerated at start, never a data disk.
func (d Drive) IsCloudInit() bool { return cloudinitRe.MatchString(d.File) }

var newDiskRe = regexp.MustCompile(`^(?:([^/:\s]+):)?(\d+(?:\.\d+)?)$`)

// Allocation reads a new-disk request "storage:size_in_GiB" ($NEW_DISK_RE;
// qemu-server allocates the volume and replaces the value).
func (d Drive) Allocation() (storage string, gib float64, ok bool) {
	m := newDiskRe.FindStringSubmatch(d.File)
	if m == nil {
		return "", 0, false
	}
	gib, _ = strconv.ParseFloat(m[2], 64)
	return m[1], gib, true
}

// NewDisk is a drive that asks qemu-server to allocate gib GiB on storage.
func NewDisk(storage string, gib int) Drive {
	return Drive{File: fmt.Sprintf("%s:%d", storage, gib)}
}

var unusedShape = pveformat.Shape{DefaultKey: "file", Aliases: map[string]pveformat.Alias{"volume": {To: "file"}}}

// ParseUnused reads an `unusedN` value: the volume qemu-server kept when a
// disk was detached (it frees it only on destroy).
func ParseUnused(key, value string) (string, error) {
	p, err := pveformat.Parse(value, unusedShape)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	v, _ := p.Get("file")
	return v, nil
}
