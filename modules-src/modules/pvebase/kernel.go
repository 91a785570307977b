package pvebase

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A new kernel installed by an earlier run (or by hand) means a reboot is
// still pending even when this run installed nothing (B5): the running
// kernel is compared with the newest kernel image in /boot.

// runningKernel is the running kernel's release ("6.14.8-2-pve"), read from
// /proc/sys/kernel/osrelease: the value uname(2) returns and the one
// pveversion prints as "running kernel" (pve-manager bin/pveversion runs
// `uname -r`). Asking pveversion cost a Perl process (it compiles
// PVE::pvecfg and, for -v, the APT API) on every run of a converged node for
// a file read's worth of information (issue 24 §3). A file, not the syscall,
// so the lab can show the kernel its node "booted" (lab/node script.go).
func (m *base) runningKernel() string {
	if st, err := m.env.Root.ReadFile("/proc/sys/kernel/osrelease"); err == nil && st.Exists {
		return strings.TrimSpace(string(st.Content))
	}
	return ""
}

// newestKernel is the newest /boot/vmlinuz-* of the same flavour as the
// running kernel (-pve on Proxmox VE; a Debian -amd64 kernel left from the
// installation does not count).
func (m *base) newestKernel(running string) string {
	ents, err := os.ReadDir(m.env.Root.Path("/boot"))
	if err != nil {
		return ""
	}
	flavour := ""
	if i := strings.LastIndexByte(running, '-'); i >= 0 {
		flavour = running[i:]
	}
	newest := ""
	for _, e := range ents {
		v, ok := strings.CutPrefix(e.Name(), "vmlinuz-")
		if !ok || !strings.HasSuffix(v, flavour) {
			continue
		}
		if newest == "" || compareVersions(v, newest) > 0 {
			newest = v
		}
	}
	return newest
}

// kernelReboot returns why a reboot is pending because of the kernel, or "".
func (m *base) kernelReboot() string {
	running := m.runningKernel()
	if running == "" {
		return ""
	}
	newest := m.newestKernel(running)
	if newest == "" || compareVersions(newest, running) <= 0 {
		return ""
	}
	return fmt.Sprintf("running kernel %s, newest installed kernel %s", running, newest)
}

// compareVersions orders version strings the way `sort -V` does for
// kernel versions: runs of digits compare as numbers, other runs as text.
func compareVersions(a, b string) int {
	for a != "" && b != "" {
		ra, rb := leadingRun(a), leadingRun(b)
		na, errA := strconv.ParseUint(ra, 10, 64)
		nb, errB := strconv.ParseUint(rb, 10, 64)
		switch {
		case errA == nil && errB == nil && na != nb:
			if na < nb {
				return -1
			}
			return 1
		case (errA != nil || errB != nil) && ra != rb:
			return strings.Compare(ra, rb)
		}
		a, b = a[len(ra):], b[len(rb):]
	}
	return strings.Compare(a, b)
}

// leadingRun is the first run of digits, or of non-digits, of s.
func leadingRun(s string) string {
	digit := s[0] >= '0' && s[0] <= '9'
	i := 1
	for i < len(s) && (s[i] >= '0' && s[i] <= '9') == digit {
		i++
	}
	return s[:i]
}
