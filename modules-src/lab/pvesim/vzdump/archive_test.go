package vzdump

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
)

// ctConf is a container config as vzdump keeps it in the archive, with a
// snapshot section: ExtractConfig gives it back byte for byte.
const ctConf = "arch: amd64\ncores: 2\nhostname: runner\nmemory: 2048\n" +
	"rootfs: tank:subvol-300-disk-0,size=8G\nunprivileged: 1\n" +
	"\n[snap1]\narch: amd64\nhostname: old\n"

// The lab's archives are real: Debian's zstd and tar read the stored-zstd
// one, and the reader takes what zstd itself compresses only as far as its
// stored blocks go.
func TestCTArchiveFormats(t *testing.T) {
	t.Parallel()
	testenv.NeedTools(t, "zstd", "tar")
	for _, comp := range []string{"", "gz", "zst"} {
		data, err := CTArchive(ctConf, comp)
		if err != nil {
			t.Fatal(err)
		}
		name := map[string]string{"": "a.tar", "gz": "a.tar.gz", "zst": "a.tar.zst"}[comp]
		if raw, err := ExtractConfig(name, data); err != nil || raw != ctConf {
			t.Errorf("%s: %q %v", name, raw, err)
		}
	}
	data, _ := CTArchive(ctConf, "zst")
	cmd := exec.Command("sh", "-c", "zstd -q -d -c | tar -xOf - ./etc/vzdump/pct.conf")
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != ctConf {
		t.Errorf("zstd -d | tar: %q %v", out, err)
	}
	if _, err := ExtractConfig("a.tar.zst", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38, 0x05, 0, 0}); err != ErrZstdCompressed {
		t.Errorf("a compressed block: %v", err)
	}
	if _, err := CTArchive(ctConf, "bz2"); err == nil {
		t.Error("a compression the lab does not write was accepted")
	}
}

// A member other than the config is passed over; an archive without one,
// and an OpenVZ backup, are refused as pve-storage refuses them.
func TestExtractConfigRefusals(t *testing.T) {
	if _, err := ExtractConfig("a.tar.lzo", nil); err == nil {
		t.Error("an unknown compression was read")
	}
	empty, err := CTArchive("", "")
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := ExtractConfig("a.tar", empty); err != nil || raw != "" {
		t.Errorf("an empty config: %q %v", raw, err)
	}
	if _, err := ExtractConfig("a.tar", []byte{}); err == nil || err.Error() != "ERROR: archive contains no configuration file" {
		t.Errorf("an archive without a config: %v", err)
	}
}
