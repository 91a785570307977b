package aptrepo

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
)

func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"dpkg-deb", "apt-ftparchive", "gpg", "gpgconf"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skipf(t, "%s is not installed (make deps): %v", tool, err)
		}
	}
}

// TestBuildAndServe builds the PVE 9 and 8 repositories and checks, through
// the HTTP server as apt would see it, what B1/B2/B3 rely on: the
// no-subscription suite offers the newer pve-manager, suites are signed, and
// the enterprise host answers 401.
func TestBuildAndServe(t *testing.T) {
	needTools(t)
	for _, tc := range []struct {
		pve                        int
		codename, newMgr           string
		otherCodename, otherNewMgr string
	}{
		{9, "trixie", "9.2.5", "bookworm", "8.4.5"},
		{8, "bookworm", "8.4.5", "trixie", "9.2.5"},
	} {
		t.Run(tc.codename, func(t *testing.T) {
			dir := t.TempDir()
			repo, err := Build(context.Background(), dir, tc.pve)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "gnupg")); !os.IsNotExist(err) {
				t.Errorf("the signing key home must be deleted after the build, stat: %v", err)
			}
			if len(repo.Installed) != 4 {
				t.Errorf("installed debs = %v, want pve-manager, toolkit, kernel, meta", repo.Installed)
			}
			srv, err := NewServer(repo, nil)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(ln)
			defer srv.Close()
			base := "http://" + ln.Addr().String()
			get := func(path string) (int, string) {
				t.Helper()
				resp, err := http.Get(base + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			code, body := get("/download.proxmox.com/debian/pve/dists/" + tc.codename + "/pve-no-subscription/binary-amd64/Packages")
			if code != 200 || !strings.Contains(body, "Version: "+tc.newMgr) {
				t.Errorf("no-subscription Packages: %d, want pve-manager %s in:\n%s", code, tc.newMgr, body)
			}
			if strings.Contains(body, "Version: "+tc.otherNewMgr) {
				t.Errorf("the %s suite lists the %s packages:\n%s", tc.codename, tc.otherCodename, body)
			}
			// The real server has every release's suite: a wrong-suite line
			// gets the other release's packages, not a 404.
			code, body = get("/download.proxmox.com/debian/pve/dists/" + tc.otherCodename + "/pve-no-subscription/binary-amd64/Packages")
			if code != 200 || !strings.Contains(body, "Version: "+tc.otherNewMgr) || strings.Contains(body, "Version: "+tc.newMgr+"\n") {
				t.Errorf("%s no-subscription Packages on a PVE %d lab: %d\n%s", tc.otherCodename, tc.pve, code, body)
			}
			if tc.pve == 9 {
				if code, _ := get("/download.proxmox.com/debian/ceph-squid/dists/bookworm/InRelease"); code != 200 {
					t.Errorf("ceph-squid bookworm: %d, want 200 as on the real server", code)
				}
			}
			code, body = get("/download.proxmox.com/debian/pve/dists/" + tc.codename + "/InRelease")
			if code != 200 || !strings.Contains(body, "BEGIN PGP SIGNED MESSAGE") {
				t.Errorf("InRelease: %d %q", code, body)
			}
			if code, _ = get("/" + EnterpriseHost + "/debian/pve/dists/" + tc.codename + "/InRelease"); code != 401 {
				t.Errorf("enterprise repository answered %d, want 401 like the real one without subscription", code)
			}
			if code, _ = get("/example.com/"); code != 403 {
				t.Errorf("unknown host answered %d, want 403", code)
			}
			// As apt's proxy: an absolute URL naming the real host.
			proxied, _ := http.NewRequest("GET", "http://deb.debian.org/debian/dists/"+tc.codename+"/Release", nil)
			client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(mustURL(t, base))}}
			resp, err := client.Do(proxied)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("proxied Debian Release: %d", resp.StatusCode)
			}
		})
	}
}

// TestFreshFiles pins the B1 shapes: deb822 on PVE 9, .list on PVE 8.
func TestFreshFiles(t *testing.T) {
	for _, tc := range []struct {
		pve  int
		want []string
		not  []string
	}{
		{9, []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list.d/pve-enterprise.sources", "/etc/apt/sources.list.d/ceph.sources"}, []string{"/etc/apt/sources.list"}},
		{8, []string{"/etc/apt/sources.list", "/etc/apt/sources.list.d/pve-enterprise.list", "/etc/apt/sources.list.d/ceph.list"}, []string{"/etc/apt/sources.list.d/debian.sources"}},
	} {
		r, err := ReleaseFor(tc.pve)
		if err != nil {
			t.Fatal(err)
		}
		files := FreshFiles(r, []byte("key"))
		for _, p := range tc.want {
			if !strings.Contains(string(files[p]), r.Codename) {
				t.Errorf("PVE %d: %s = %q, want a file naming %s", tc.pve, p, files[p], r.Codename)
			}
		}
		for _, p := range tc.not {
			if _, ok := files[p]; ok {
				t.Errorf("PVE %d: unexpected %s", tc.pve, p)
			}
		}
	}
	if _, err := ReleaseFor(7); err == nil {
		t.Error("PVE 7 must be refused")
	}
}

func TestProxmoxLibVersionsDiffer(t *testing.T) {
	a, b := ProxmoxLib("5.0.5"), ProxmoxLib("5.0.6")
	if a == b {
		t.Fatal("two toolkit versions must ship different files, or an upgrade rewrites nothing (B3)")
	}
	for _, s := range []string{a, b} {
		if !strings.Contains(s, "Ext.Msg.show({\n\t\t\t\ttitle: gettext('No valid sub") ||
			!strings.Contains(s, ".data.status.toLowerCase() !== 'active'") {
			t.Errorf("proxmoxlib.js lost the real subscription-check shape:\n%s", s)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
