package pvebase

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// validateParams refuses, before anything is read from the node, the values
// that would end up in an APT file or on apt-get's command line in a form
// that changes their meaning (a newline or "]" smuggling "Trusted: yes" or
// [trusted=yes] into a repository entry, a package name starting with "-"
// read as an option), and option combinations that contradict each other.
func validateParams(p params) error {
	if p.Suite != "" && !suiteName.MatchString(p.Suite) {
		return fmt.Errorf("suite: %q is not a Debian suite name (letters, digits and . + - only, e.g. trixie)", p.Suite)
	}
	if p.CephRelease != "" && !cephName.MatchString(p.CephRelease) {
		return fmt.Errorf("ceph_release: %q is not a Ceph release name (lower-case letters only, e.g. squid)", p.CephRelease)
	}
	for _, k := range slices.Sorted(maps.Keys(p.RepositoryURLs)) {
		if p.RepositoryURLs[k] == "" {
			continue // unset: the default URL
		}
		if err := checkRepoURL(p.RepositoryURLs[k]); err != nil {
			return fmt.Errorf("repository_urls.%s: %w", k, err)
		}
	}
	if p.SignedBy != nil && *p.SignedBy != "" {
		s := *p.SignedBy
		if strings.ContainsFunc(s, isSpaceOrControl) || !strings.HasPrefix(s, "/") {
			return fmt.Errorf("signed_by: %q must be the absolute path of a keyring file, one word (e.g. %s), or empty to omit Signed-By", s, defSignedBy)
		}
	}
	for _, pkg := range p.ExtraPackages {
		if !packageName.MatchString(pkg) {
			return fmt.Errorf("extra_packages: %q is not a Debian package name (lower-case letters, digits and + - ., starting with a letter or digit; optionally :arch)", pkg)
		}
	}
	if p.NoticeHook && !p.RemoveNotice {
		return fmt.Errorf("subscription_notice_hook: true installs a hook that removes the subscription notice after every upgrade, which contradicts remove_subscription_notice: false; set both to true, or subscription_notice_hook: false")
	}
	if p.ZFSArcLive && p.ZFSArcMax == "" {
		return fmt.Errorf("zfs_arc_live: true applies zfs_arc_max to the running system, but zfs_arc_max is not set; set zfs_arc_max too, or drop zfs_arc_live")
	}
	return nil
}

var (
	suiteName   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+-]*$`)
	cephName    = regexp.MustCompile(`^[a-z]+$`)
	packageName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(:[a-z0-9-]+)?$`)
)

// repoSchemes are the APT methods a Proxmox repository is served over.
var repoSchemes = []string{"http", "https", "file", "mirror+http", "mirror+https", "mirror+file", "tor+http", "tor+https"}

// checkRepoURL accepts one URL APT can fetch from, as one word that cannot
// close a .list option block or start a new deb822 field.
func checkRepoURL(raw string) error {
	if strings.ContainsFunc(raw, isSpaceOrControl) {
		return fmt.Errorf("%q contains a space, tab or line break; give one URL (a line break would let the value add fields such as Trusted: yes to the repository file)", raw)
	}
	if strings.ContainsAny(raw, "[]\"'#") {
		return fmt.Errorf("%q contains [, ], quotes or #, which APT reads as options or comments in a repository entry", raw)
	}
	u, err := url.Parse(strings.ReplaceAll(raw, "{ceph_release}", "release"))
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if !slices.Contains(repoSchemes, u.Scheme) {
		return fmt.Errorf("%q: scheme %q is not one APT fetches repositories over (%s)", raw, u.Scheme, strings.Join(repoSchemes, ", "))
	}
	if u.Host == "" && !strings.HasSuffix(u.Scheme, "file") {
		return fmt.Errorf("%q has no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q has a query or fragment; a repository URL is a base path", raw)
	}
	return nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }
