// Package initramfs is the lab's update-initramfs stand-in. It generates
// nothing; it records every invocation, with the content of
// /etc/modprobe.d/zfs.conf at that moment, so tests can assert that the
// initramfs was rebuilt exactly when the ARC cap changed (B4).
package initramfs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
	"github.com/gopve/proxmox/modules-src/lab/tools/statefile"
)

// LogFile (JSON lines, one Record each) lives under state_dir.
const LogFile = "update-initramfs.log"

// ZfsConf is the file whose content each record captures.
const ZfsConf = "/etc/modprobe.d/zfs.conf"

// Record is one invocation.
type Record struct {
	Time    time.Time `json:"time"`
	Args    []string  `json:"args"`
	Kernels []string  `json:"kernels"`
	// ZfsConf is the file's content, nil when it did not exist.
	ZfsConf       *string `json:"zfs_conf"`
	ZfsConfSHA256 string  `json:"zfs_conf_sha256,omitempty"`
}

// Tool runs update-initramfs on one node.
type Tool struct {
	Env  *cli.Env
	Node *nodecfg.Node
	Now  func() time.Time
}

const usage = `Usage: update-initramfs {-c|-d|-u} [-k version] [-v] [-b directory]

Options:
 -k version	Specify kernel version or 'all'
 -c		Create a new initramfs
 -u		Update an existing initramfs
 -d		Remove an existing initramfs
 -b directory	Set alternate boot directory
 -v		Be verbose
`

// defaultKernels are the kernels of a fresh PVE 8 / 9 install.
var defaultKernels = map[int][]string{8: {"6.8.12-4-pve"}, 9: {"6.14.8-2-pve"}}

func (t *Tool) kernels() []string {
	ents, err := os.ReadDir(t.Node.HostPath("/lib/modules"))
	var out []string
	if err == nil {
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, e.Name())
			}
		}
	}
	if len(out) == 0 {
		out = append(out, defaultKernels[min(max(t.Node.PVE, 8), 9)]...)
	}
	sort.Strings(out)
	return out
}

// Run executes update-initramfs with env.Args.
func (t *Tool) Run() int {
	opts, _, err := cli.Getopt(t.Env.Args, "cdutvk:b:")
	if err != nil {
		t.Env.Errf("%s", usage)
		return 2
	}
	mode, version := "", ""
	for _, o := range opts {
		switch o.Name {
		case 'c', 'd', 'u':
			mode = string(o.Name)
		case 'k':
			version = o.Value
		}
	}
	if mode == "" {
		t.Env.Errf("%s", usage)
		return 2
	}
	known := t.kernels()
	var targets []string
	switch version {
	case "all":
		targets = known
	case "":
		targets = known[len(known)-1:]
	default:
		targets = []string{version}
		if mode == "u" && !contains(known, version) {
			return t.Env.Fail(1, "/boot/initrd.img-%s does not exist. Cannot update.", version)
		}
	}
	rec := Record{Time: t.Now().UTC(), Args: append([]string{}, t.Env.Args...), Kernels: targets}
	b, err := os.ReadFile(t.Node.HostPath(ZfsConf))
	switch {
	case err == nil:
		s := string(b)
		sum := sha256.Sum256(b)
		rec.ZfsConf, rec.ZfsConfSHA256 = &s, hex.EncodeToString(sum[:])
	case !errors.Is(err, fs.ErrNotExist):
		return t.Env.Fail(1, "update-initramfs: cannot read %s: %v", ZfsConf, err)
	}
	line, _ := json.Marshal(rec)
	if err := statefile.AppendLine(t.Node.StatePath(LogFile), string(line)); err != nil {
		return t.Env.Fail(1, "update-initramfs: %v", err)
	}
	verb := map[string]string{"c": "Generating", "u": "Generating", "d": "Deleting"}[mode]
	for _, k := range targets {
		t.Env.Outf("update-initramfs: %s /boot/initrd.img-%s\n", verb, k)
	}
	if mode != "d" {
		t.Env.Outf("Running hook script 'zz-proxmox-boot'..\nRe-executing '/etc/kernel/postinst.d/zz-proxmox-boot' in new private mount namespace..\nNo /etc/kernel/proxmox-boot-uuids found, skipping ESP sync.\n")
	}
	return 0
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

// ReadLog returns the recorded invocations (for tests and the lab CLI).
func ReadLog(path string) ([]Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
