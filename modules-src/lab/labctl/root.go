package labctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/systool"
)

// TrixieRoot returns the cached Debian 13 root the PVE 9 nodes stand on,
// building it once with hack/debian-root.sh (a few minutes the first time).
// GOPVE_DEBIAN_ROOT_SCRIPT overrides where the script is.
func TrixieRoot(ctx context.Context) (string, error) {
	script := os.Getenv("GOPVE_DEBIAN_ROOT_SCRIPT")
	if script == "" {
		var err error
		if script, err = findRepoFile(filepath.Join("hack", "debian-root.sh")); err != nil {
			// Outside a checkout: a root the script built earlier will do.
			if root := cachedRoot("trixie"); root != "" {
				return root, nil
			}
			return "", err
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script, "trixie")
	cmd.Env = systool.Env() // debootstrap and friends live in /usr/sbin
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the Debian 13 root for PVE 9 nodes (%s trixie): %w: %s", script, err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	root := strings.TrimSpace(lines[len(lines)-1])
	if _, err := os.Stat(filepath.Join(root, "usr/sbin/sshd")); err != nil {
		return "", fmt.Errorf("the Debian 13 root %q has no sshd: %w", root, err)
	}
	return root, nil
}

// cachedRoot is the root hack/debian-root.sh leaves in its cache, if it is
// complete (it is renamed into place only when built).
func cachedRoot(suite string) string {
	cache := os.Getenv("GOPVE_CACHE")
	if cache == "" {
		cache = "/var/cache/gopve"
	}
	root := filepath.Join(cache, "roots", suite)
	if _, err := os.Stat(filepath.Join(root, "usr/sbin/sshd")); err != nil {
		return ""
	}
	return root
}

// FindLabtools returns the CLI stand-ins binary for a lab: a `labtools`
// next to the running executable, else one built from the checkout into
// dir; "" when neither exists (the caller may then install itself, if it
// is a multi-call binary like the `lab` command).
func FindLabtools(ctx context.Context, dir string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "labtools")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	if _, err := RepoRoot(); err != nil {
		return "", nil
	}
	if _, err := goTool(); err != nil {
		return "", nil // a checkout but no Go toolchain: the caller's fallback
	}
	return BuildLabtools(ctx, dir)
}

// findRepoFile looks for rel in the working directory, the executable's
// directory and their parents: the lab runs from a checkout.
func findRepoFile(rel string) (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, rel)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("cannot find " + rel + ": run the lab from the gopve.proxmox checkout")
}

// RepoRoot is the checkout the lab runs from (where go.mod is).
func RepoRoot() (string, error) {
	p, err := findRepoFile("go.mod")
	if err != nil {
		return "", err
	}
	return filepath.Dir(p), nil
}

// goTool is the Go toolchain: from PATH, else where the official tarball
// installs it.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	const official = "/usr/local/go/bin/go"
	if _, err := os.Stat(official); err == nil {
		return official, nil
	}
	return "", errors.New("building the CLI stand-ins needs Go: not in PATH nor at " + official)
}

// BuildLabtools builds the CLI stand-ins binary into dir and returns its
// path; "" and no error when the checkout has no modules-src/cmd/labtools.
func BuildLabtools(ctx context.Context, dir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "modules-src", "cmd", "labtools")); err != nil {
		return "", nil
	}
	goBin, err := goTool()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "labtools")
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, "./modules-src/cmd/labtools")
	cmd.Dir = root
	cmd.Env = systool.Env("CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the CLI stand-ins (go build ./modules-src/cmd/labtools): %w: %s", err, b)
	}
	return out, nil
}
