package aptrepo

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/systool"
)

// Repo is a built set of repositories on disk, ready to be served.
type Repo struct {
	Release Release
	// Root holds one directory per repository host (www/<host>/<path>/dists…).
	Root string
	// Keyring is the binary OpenPGP public key that signed every suite; nodes
	// get it where a fresh PVE keeps the Proxmox and Debian keyrings.
	Keyring []byte
	// Installed are the .deb files a fresh node has installed (dpkg -i at
	// creation), in an order dpkg accepts in one call.
	Installed []string
}

// archive is one repository base URL: a host, a path and its suites.
type archive struct {
	host, path string
	suites     map[string]map[string][]pkg // suite → component → packages
}

func archives(r Release) []archive {
	c := r.Codename
	var extras []pkg
	for _, n := range debianExtras {
		extras = append(extras, debianExtraPkg(r.Codename, n))
	}
	debComponents := []string{"main", "contrib", "non-free-firmware"}
	if r.PVE == 8 {
		debComponents = []string{"main", "contrib", "non-free", "non-free-firmware"}
	}
	debian := func(withExtras bool) map[string][]pkg {
		m := map[string][]pkg{}
		for _, comp := range debComponents {
			m[comp] = nil
		}
		if withExtras {
			m["main"] = extras
		}
		return m
	}
	debianSuites := map[string]map[string][]pkg{c: debian(true), c + "-updates": debian(false)}
	security := map[string]map[string][]pkg{c + "-security": debian(false)}
	return []archive{
		{host: "deb.debian.org", path: "debian", suites: debianSuites},
		{host: "ftp.debian.org", path: "debian", suites: debianSuites},
		{host: "security.debian.org", path: "debian-security", suites: security},
		// PVE 8's installer writes http://security.debian.org with no path.
		{host: "security.debian.org", path: "", suites: security},
		{host: "download.proxmox.com", path: "debian/pve", suites: pveSuites(r)},
		{host: "download.proxmox.com", path: "debian/" + r.CephDir, suites: cephSuites(r)},
	}
}

// pveSuites is download.proxmox.com/debian/pve: like the real server it
// answers for both simulated releases' suites, so a node pointed at the
// wrong one (bookworm on PVE 9) sees the other release's packages, as it
// would for real.
func pveSuites(r Release) map[string]map[string][]pkg {
	out := map[string]map[string][]pkg{}
	for _, v := range []int{8, 9} {
		rel, _ := ReleaseFor(v)
		out[rel.Codename] = map[string][]pkg{"pve-no-subscription": noSubscriptionPkgs(rel), "pve-test": nil}
	}
	return out
}

// cephSuites is the release's Ceph repository with the suites the real
// server has for it (ceph-squid: bookworm and trixie; ceph-quincy: bookworm).
func cephSuites(r Release) map[string]map[string][]pkg {
	out := map[string]map[string][]pkg{r.Codename: {"no-subscription": nil, "test": nil}}
	if r.CephDir == "ceph-squid" {
		out["bookworm"] = map[string][]pkg{"no-subscription": nil, "test": nil}
	}
	return out
}

// Build writes the repositories of one PVE release under dir: it builds the
// dummy packages with dpkg-deb, indexes them with apt-ftparchive and signs
// every suite with a throwaway gpg key whose secret part is deleted at the end
// (the repositories never change once built).
func Build(ctx context.Context, dir string, pve int) (*Repo, error) {
	r, err := ReleaseFor(pve)
	if err != nil {
		return nil, err
	}
	for _, tool := range []string{"dpkg-deb", "apt-ftparchive", "gpg", "gpgconf"} {
		if _, err := systool.Path(tool); err != nil {
			return nil, fmt.Errorf("building the lab's apt repository: %w", err)
		}
	}
	repo := &Repo{Release: r, Root: filepath.Join(dir, "www")}
	debs := filepath.Join(dir, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return nil, fmt.Errorf("creating the package directory: %w", err)
	}
	built := map[string]string{} // deb file name → path
	buildOnce := func(p pkg) (string, error) {
		if path, ok := built[p.filename()]; ok {
			return path, nil
		}
		path, err := buildDeb(ctx, filepath.Join(dir, "build"), debs, p)
		if err != nil {
			return "", err
		}
		built[p.filename()] = path
		return path, nil
	}
	for _, p := range installedPkgs(r) {
		path, err := buildOnce(p)
		if err != nil {
			return nil, err
		}
		repo.Installed = append(repo.Installed, path)
	}
	_ = os.RemoveAll(filepath.Join(dir, "build"))

	// The key's home is a short temporary directory, not one under dir:
	// gpg-agent's sockets live there (S.gpg-agent.browser the longest), and
	// past a socket address's 107 bytes gpg only says "No agent running".
	home, err := os.MkdirTemp("", "gopve-gnupg-")
	if err != nil {
		return nil, fmt.Errorf("creating the signing key home: %w", err)
	}
	signer, err := newSigner(ctx, home)
	if err != nil {
		return nil, err
	}
	defer signer.close()
	if repo.Keyring, err = signer.publicKey(ctx); err != nil {
		return nil, err
	}
	for _, a := range archives(r) {
		if err := writeArchive(ctx, repo.Root, a, buildOnce, signer); err != nil {
			return nil, err
		}
	}
	_ = os.RemoveAll(filepath.Join(dir, "build"))
	return repo, nil
}

// buildDeb assembles one package tree and runs dpkg-deb on it.
func buildDeb(ctx context.Context, workDir, outDir string, p pkg) (string, error) {
	tree := filepath.Join(workDir, p.Name+"_"+p.Version)
	if err := os.MkdirAll(filepath.Join(tree, "DEBIAN"), 0o755); err != nil {
		return "", fmt.Errorf("building %s: %w", p.filename(), err)
	}
	write := func(path, content string, mode os.FileMode) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, []byte(content), mode)
	}
	if err := write(filepath.Join(tree, "DEBIAN", "control"), p.control(), 0o644); err != nil {
		return "", fmt.Errorf("building %s: %w", p.filename(), err)
	}
	if p.Postinst != "" {
		if err := write(filepath.Join(tree, "DEBIAN", "postinst"), p.Postinst, 0o755); err != nil {
			return "", fmt.Errorf("building %s: %w", p.filename(), err)
		}
	}
	for path, content := range p.Files {
		mode := os.FileMode(0o644)
		if m, ok := p.Modes[path]; ok {
			mode = os.FileMode(m)
		}
		if err := write(filepath.Join(tree, path), content, mode); err != nil {
			return "", fmt.Errorf("building %s: %w", p.filename(), err)
		}
	}
	out := filepath.Join(outDir, p.filename())
	if _, err := run(ctx, "", nil, "dpkg-deb", "--root-owner-group", "-Zgzip", "--build", tree, out); err != nil {
		return "", fmt.Errorf("building %s: %w", p.filename(), err)
	}
	return out, nil
}

// writeArchive lays out pool/ and dists/ of one archive and signs its suites.
func writeArchive(ctx context.Context, root string, a archive, build func(pkg) (string, error), s *signer) error {
	base := filepath.Join(root, a.host, filepath.FromSlash(a.path))
	suites := slices.Sorted(maps.Keys(a.suites))
	for _, suite := range suites {
		comps := a.suites[suite]
		names := make([]string, 0, len(comps))
		for comp, pkgs := range comps {
			names = append(names, comp)
			// One pool per suite: a suite's index lists its own packages only
			// (bookworm's kernels are not trixie's).
			pool := filepath.Join(base, "pool", suite, comp)
			if err := os.MkdirAll(pool, 0o755); err != nil {
				return fmt.Errorf("creating %s: %w", pool, err)
			}
			for _, p := range pkgs {
				src, err := build(p)
				if err != nil {
					return err
				}
				dst := filepath.Join(pool, p.filename())
				if _, err := os.Stat(dst); err == nil {
					continue
				}
				if err := os.Link(src, dst); err != nil {
					return fmt.Errorf("adding %s to %s: %w", p.filename(), pool, err)
				}
			}
			index, err := run(ctx, base, nil, "apt-ftparchive", "packages", "pool/"+suite+"/"+comp)
			if err != nil {
				return fmt.Errorf("indexing %s %s %s: %w", a.host, suite, comp, err)
			}
			binDir := filepath.Join(base, "dists", suite, comp, "binary-amd64")
			if err := os.MkdirAll(binDir, 0o755); err != nil {
				return fmt.Errorf("creating %s: %w", binDir, err)
			}
			if err := os.WriteFile(filepath.Join(binDir, "Packages"), index, 0o644); err != nil {
				return fmt.Errorf("writing the %s index: %w", suite, err)
			}
		}
		sort.Strings(names)
		origin := "Debian"
		if strings.Contains(a.host, "proxmox") {
			origin = "Proxmox"
		}
		release, err := run(ctx, base, nil, "apt-ftparchive",
			"-o", "APT::FTPArchive::Release::Origin="+origin,
			"-o", "APT::FTPArchive::Release::Label="+origin,
			"-o", "APT::FTPArchive::Release::Suite="+suite,
			"-o", "APT::FTPArchive::Release::Codename="+suite,
			"-o", "APT::FTPArchive::Release::Architectures=amd64 all",
			"-o", "APT::FTPArchive::Release::Components="+strings.Join(names, " "),
			"release", "dists/"+suite)
		if err != nil {
			return fmt.Errorf("writing the %s Release file: %w", suite, err)
		}
		dists := filepath.Join(base, "dists", suite)
		if err := os.WriteFile(filepath.Join(dists, "Release"), release, 0o644); err != nil {
			return fmt.Errorf("writing the %s Release file: %w", suite, err)
		}
		if err := s.sign(ctx, dists); err != nil {
			return err
		}
	}
	return nil
}

// signer holds a throwaway gpg home; close kills its agent and deletes it,
// secret key included.
type signer struct{ home string }

func newSigner(ctx context.Context, home string) (*signer, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("creating the signing key home: %w", err)
	}
	s := &signer{home: home}
	if _, err := s.gpg(ctx, "--quick-generate-key", "gopve lab archive <lab@gopve.invalid>", "ed25519", "sign", "never"); err != nil {
		s.close()
		return nil, fmt.Errorf("generating the repository signing key: %w", err)
	}
	return s, nil
}

func (s *signer) gpg(ctx context.Context, args ...string) ([]byte, error) {
	base := []string{"--batch", "--yes", "--quiet", "--no-tty", "--pinentry-mode", "loopback", "--passphrase", ""}
	return run(ctx, "", []string{"GNUPGHOME=" + s.home}, "gpg", append(base, args...)...)
}

func (s *signer) publicKey(ctx context.Context) ([]byte, error) {
	key, err := s.gpg(ctx, "--export")
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("exporting the repository key: %w", err)
	}
	return key, nil
}

func (s *signer) sign(ctx context.Context, dists string) error {
	release := filepath.Join(dists, "Release")
	if _, err := s.gpg(ctx, "--digest-algo", "SHA512", "--clearsign", "-o", filepath.Join(dists, "InRelease"), release); err != nil {
		return fmt.Errorf("signing %s: %w", release, err)
	}
	if _, err := s.gpg(ctx, "--digest-algo", "SHA512", "--armor", "--detach-sign", "-o", filepath.Join(dists, "Release.gpg"), release); err != nil {
		return fmt.Errorf("signing %s: %w", release, err)
	}
	return nil
}

func (s *signer) close() {
	// gpg starts an agent on first use; it must not outlive the build.
	if cmd, err := systool.Command(context.Background(), "gpgconf", "--kill", "all"); err == nil {
		cmd.Env = systool.Env("GNUPGHOME=" + s.home)
		_ = cmd.Run()
	}
	_ = os.RemoveAll(s.home)
}

// run executes a tool and returns its stdout; the error carries its stderr.
func run(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd, err := systool.Command(ctx, name, args...)
	if err != nil {
		return nil, err
	}
	cmd.Dir = dir
	cmd.Env = systool.Env(env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
