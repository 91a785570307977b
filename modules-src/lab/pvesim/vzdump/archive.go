// Package vzdump is the container backup archive as vzdump writes it
// (pve-container's PVE::VZDump::LXC, src/PVE/VZDump/LXC.pm): a tar of the
// container's root with the config at ./etc/vzdump/pct.conf, compressed as
// its name says (.tar, .tar.gz/.tgz, .tar.zst, …). The lab reads the config
// out of it as pve-storage's extract_vzdump_config_tar (PVE/Storage.pm)
// does (the first member matching the config's name, its lines each
// ending in "\n", as run_command's outfunc collects them).
//
// Reconstruction: the lab's archives carry the config alone (no root
// filesystem: containers' contents are not simulated), and its zstd is
// the format's stored ("raw") and RLE blocks only; a compressed zstd
// block (an archive from a real vzdump) is refused with a clear error.
package vzdump

import (
	"archive/tar"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// CTArchive builds a container backup holding pctConf, compressed by comp:
// "" (a plain .tar), "gz" or "zst". It is what labctl's PutCTBackup writes
// on a node and what tests hand the simulator's BackupArchive hook.
func CTArchive(pctConf, comp string) ([]byte, error) {
	var t bytes.Buffer
	tw := tar.NewWriter(&t)
	for _, d := range []string{"./", "./etc/", "./etc/vzdump/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "./etc/vzdump/pct.conf", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(pctConf))}); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(tw, pctConf); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	switch comp {
	case "":
		return t.Bytes(), nil
	case "gz":
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		if _, err := zw.Write(t.Bytes()); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return z.Bytes(), nil
	case "zst":
		return zstdStored(t.Bytes()), nil
	}
	return nil, fmt.Errorf("compression %q: the lab writes none, gz or zst", comp)
}

// zstdStored is one zstd frame (RFC 8878) of raw blocks: no frame content
// size, a 128 KiB window (descriptor 0x38: 2^(10+7)), blocks of at most
// Block_Maximum_Size (128 KiB), the last one flagged. zstd -d reads it.
func zstdStored(data []byte) []byte {
	const maxBlock = 128 << 10
	out := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38}
	for {
		n := min(len(data), maxBlock)
		hdr := uint32(n) << 3 // block type 0: raw
		if n == len(data) {
			hdr |= 1 // Last_Block
		}
		out = append(out, byte(hdr), byte(hdr>>8), byte(hdr>>16))
		out = append(out, data[:n]...)
		data = data[n:]
		if hdr&1 == 1 {
			return out
		}
	}
}

// ErrZstdCompressed is what reading a zstd frame with a compressed block
// (an archive from a real vzdump) gives.
var ErrZstdCompressed = errors.New("zstd: compressed blocks are not decoded by the lab (its archives are stored uncompressed)")

// unzstdStored decodes zstd frames made of raw and RLE blocks (skippable
// frames skipped).
func unzstdStored(b []byte) ([]byte, error) {
	var out []byte
	short := errors.New("zstd: truncated frame")
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, short
		}
		magic := binary.LittleEndian.Uint32(b)
		if magic&0xfffffff0 == 0x184d2a50 { // skippable frame
			if len(b) < 8 {
				return nil, short
			}
			n := int(binary.LittleEndian.Uint32(b[4:]))
			if len(b) < 8+n {
				return nil, short
			}
			b = b[8+n:]
			continue
		}
		if magic != 0xfd2fb528 {
			return nil, errors.New("zstd: not a zstd frame")
		}
		b = b[4:]
		if len(b) < 1 {
			return nil, short
		}
		fhd := b[0]
		b = b[1:]
		single := fhd&0x20 != 0
		skip := 0
		if !single {
			skip++ // Window_Descriptor
		}
		skip += []int{0, 1, 2, 4}[fhd&3] // Dictionary_ID
		fcs := []int{0, 2, 4, 8}[fhd>>6]
		if fhd>>6 == 0 && single {
			fcs = 1
		}
		skip += fcs
		if len(b) < skip {
			return nil, short
		}
		b = b[skip:]
		for {
			if len(b) < 3 {
				return nil, short
			}
			hdr := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
			b = b[3:]
			last, typ, size := hdr&1 == 1, (hdr>>1)&3, int(hdr>>3)
			switch typ {
			case 0:
				if len(b) < size {
					return nil, short
				}
				out = append(out, b[:size]...)
				b = b[size:]
			case 1:
				if len(b) < 1 {
					return nil, short
				}
				out = append(out, bytes.Repeat(b[:1], size)...)
				b = b[1:]
			default:
				return nil, ErrZstdCompressed
			}
			if last {
				break
			}
		}
		if fhd&4 != 0 { // Content_Checksum
			if len(b) < 4 {
				return nil, short
			}
			b = b[4:]
		}
	}
	return out, nil
}

// vzdumpConfRe is recover_config_from_tar's member: ./etc/vzdump/pct.conf
// (or an OpenVZ backup's vps.conf).
var vzdumpConfRe = regexp.MustCompile(`^(\./etc/vzdump/(pct|vps)\.conf)$`)

// decompressArchive undoes the compression the archive's name gives
// (PVE::Storage::archive_info's decompressor table).
func decompressArchive(name string, data []byte) ([]byte, error) {
	switch {
	case strings.HasSuffix(name, ".tar"):
		return data, nil
	case strings.HasSuffix(name, ".tar.gz"), strings.HasSuffix(name, ".tgz"):
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	case strings.HasSuffix(name, ".tar.bz2"):
		return io.ReadAll(bzip2.NewReader(bytes.NewReader(data)))
	case strings.HasSuffix(name, ".tar.zst"):
		return unzstdStored(data)
	}
	return nil, fmt.Errorf("the lab cannot decompress '%s' (tar, gz, bz2 and stored zst only)", name)
}

// ExtractConfig is extract_vzdump_config_tar for a container
// backup: the config's text, each line ending in "\n".
func ExtractConfig(name string, data []byte) (string, error) {
	plain, err := decompressArchive(name, data)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(bytes.NewReader(plain))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", errors.New("ERROR: archive contains no configuration file")
		}
		if err != nil {
			return "", fmt.Errorf("tar: %v", err)
		}
		m := vzdumpConfRe.FindStringSubmatch(h.Name)
		if m == nil {
			continue
		}
		if m[2] == "vps" {
			return "", errors.New("OpenVZ backups (vps.conf) are not simulated by the lab")
		}
		raw, err := io.ReadAll(tr)
		if err != nil {
			return "", fmt.Errorf("tar: %v", err)
		}
		if len(raw) == 0 {
			return "", nil
		}
		var b strings.Builder
		for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
			b.WriteString(l + "\n")
		}
		return b.String(), nil
	}
}
