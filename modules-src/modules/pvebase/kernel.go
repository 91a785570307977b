package pvebase

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/host"
)

// A new kernel installed by an earlier run (or by hand) means a reboot is
// still pending even when this run installed nothing (B5): the running
// kernel is compared with the newest kernel image in /boot.

var runningKernelRe = regexp.MustCompile(`\(running kernel: ([^)\s]+)\)`)

// runningKernel asks pveversion ("pve-manager/9.2.5/… (running kernel:
// 6.14.8-2-pve)"), falling back to the kernel's own osrelease.
func (m *base) runningKernel(ctx context.Context) string {
	if res, err := m.env.Runner.Run(ctx, host.Command{Name: "pveversion"}); err == nil {
		if s := runningKernelRe.FindStringSubmatch(res.Stdout); s != nil {
			return s[1]
		}
	}
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
func (m *base) kernelReboot(ctx context.Context) string {
	running := m.runningKernel(ctx)
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
