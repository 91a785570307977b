package apt

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/host"
)

// Fresh PVE 9 node files (B1).
const enterpriseSources = `Types: deb
URIs: https://enterprise.proxmox.com/debian/pve
Suites: trixie
Components: pve-enterprise
Signed-By: /usr/share/keyrings/proxmox-archive-keyring.gpg
`

const debianSources = `# main archive
Types: deb deb-src
URIs: http://deb.debian.org/debian/
Suites: trixie trixie-updates
Components: main contrib non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.debian.org/debian-security/
Suites: trixie-security
Components: main contrib non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`

func TestDeb822RoundTripAndToggle(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		entry   int
		enable  bool
		want    string
		changed bool
	}{
		{"disable enterprise", enterpriseSources, 0, false, "Enabled: no\n" + enterpriseSources, true},
		{"enable again removes the field", "Enabled: no\n" + enterpriseSources, 0, true, enterpriseSources, true},
		{"Enabled: false is disabled already", strings.Replace(enterpriseSources, "Types", "Enabled: false\nTypes", 1), 0, false,
			strings.Replace(enterpriseSources, "Types", "Enabled: false\nTypes", 1), false},
		{"second stanza only, comments kept", debianSources, 1, false,
			strings.Replace(debianSources, "Types: deb\nURIs: http://security", "Enabled: no\nTypes: deb\nURIs: http://security", 1), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseFile("/etc/apt/sources.list.d/x.sources", Deb822, []byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(f.Bytes()) != c.in {
				t.Fatalf("round trip changed the file:\n%s", f.Bytes())
			}
			if err := f.SetEnabled(c.entry, c.enable); err != nil {
				t.Fatal(err)
			}
			if got := string(f.Bytes()); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
			if (string(f.Bytes()) != c.in) != c.changed {
				t.Errorf("changed = %v, want %v", string(f.Bytes()) != c.in, c.changed)
			}
			if f.Entries()[c.entry].Enabled != c.enable {
				t.Errorf("entry Enabled = %v after SetEnabled(%v)", f.Entries()[c.entry].Enabled, c.enable)
			}
		})
	}
}

func TestDeb822Entries(t *testing.T) {
	f, err := ParseFile("debian.sources", Deb822, []byte(debianSources))
	if err != nil {
		t.Fatal(err)
	}
	e := f.Entries()
	if len(e) != 2 {
		t.Fatalf("want 2 entries, got %d", len(e))
	}
	if !reflect.DeepEqual(e[0].Suites, []string{"trixie", "trixie-updates"}) || !e[0].HasURI("http://deb.debian.org/debian") || !e[0].HasComponent("contrib") {
		t.Errorf("entry 0 = %+v", e[0])
	}
}

func TestDeb822Errors(t *testing.T) {
	for name, in := range map[string]string{
		"not a field":         "Types deb\n",
		"missing URIs":        "Types: deb\nSuites: trixie\n",
		"bad Enabled":         "Enabled: maybe\n" + enterpriseSources,
		"orphan continuation": " foo\nTypes: deb\n",
	} {
		if _, err := ParseFile("x.sources", Deb822, []byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestListToggleAndSuite(t *testing.T) {
	const pve8 = "deb https://enterprise.proxmox.com/debian/pve bookworm pve-enterprise\n"
	cases := []struct {
		name   string
		in     string
		enable bool
		suite  string
		want   string
	}{
		{"disable comments the line out", pve8, false, "", "# " + pve8},
		{"enable uncomments", "# " + pve8, true, "", pve8},
		{"enable uncomments ##", "##deb http://x/ bookworm main\n", true, "", "deb http://x/ bookworm main\n"},
		{"suite change keeps options", "deb [arch=amd64 signed-by=/k.gpg] http://download.proxmox.com/debian/pve bookworm pve-no-subscription\n", true, "trixie",
			"deb [arch=amd64 signed-by=/k.gpg] http://download.proxmox.com/debian/pve trixie pve-no-subscription\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseFile("x.list", OneLine, []byte("# a comment\n"+c.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Entries()) != 1 {
				t.Fatalf("entries = %+v", f.Entries())
			}
			if err := f.SetEnabled(0, c.enable); err != nil {
				t.Fatal(err)
			}
			if c.suite != "" {
				if err := f.SetSuites(0, c.suite); err != nil {
					t.Fatal(err)
				}
			}
			if got := string(f.Bytes()); got != "# a comment\n"+c.want {
				t.Errorf("got %q want %q", got, "# a comment\n"+c.want)
			}
		})
	}
	if _, err := ParseFile("x.list", OneLine, []byte("garbage line\n")); err == nil {
		t.Error("a non-entry, non-comment line parsed")
	}
}

func TestOSRelease(t *testing.T) {
	o := ParseOSRelease([]byte("PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nID=debian\nVERSION_ID=\"13\"\nVERSION_CODENAME=trixie\n"))
	if o != (OSRelease{ID: "debian", VersionID: "13", VersionCodename: "trixie"}) {
		t.Errorf("got %+v", o)
	}
}

func TestReadAll(t *testing.T) {
	root := host.Root(t.TempDir())
	files := map[string]string{
		"/etc/apt/sources.list":                       "deb http://ftp.debian.org/debian bookworm main\n",
		"/etc/apt/sources.list.d/pve-enterprise.list": "# deb https://enterprise.proxmox.com/debian/pve bookworm pve-enterprise\n",
		"/etc/apt/sources.list.d/debian.sources":      debianSources,
		"/etc/apt/sources.list.d/old.list.save":       "garbage that APT ignores\n",
		"/etc/apt/sources.list.d/notes.txt":           "garbage that APT ignores\n",
	}
	for p, c := range files {
		os.MkdirAll(filepath.Dir(root.Path(p)), 0o755)
		os.WriteFile(root.Path(p), []byte(c), 0o644)
	}
	got, err := ReadAll(root)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range got {
		paths = append(paths, f.Path+":"+string(f.Format))
	}
	want := []string{"/etc/apt/sources.list:list", "/etc/apt/sources.list.d/debian.sources:deb822", "/etc/apt/sources.list.d/pve-enterprise.list:list"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("ReadAll = %q", paths)
	}
	if e := got[2].Entries(); len(e) != 1 || e[0].Enabled {
		t.Errorf("commented-out enterprise entry = %+v", e)
	}
}

func TestSandbox(t *testing.T) {
	sb, err := NewSandbox(map[string][]byte{
		SourcesList:                        []byte("deb http://a/ x main\n"),
		SourcesDir + "/pve-no-sub.sources": []byte("Types: deb\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(filepath.Join(sb.Dir, "sources.list"))
	b2, _ := os.ReadFile(filepath.Join(sb.Dir, "sources.list.d", "pve-no-sub.sources"))
	if string(b1) != "deb http://a/ x main\n" || string(b2) != "Types: deb\n" {
		t.Errorf("sandbox files: %q %q", b1, b2)
	}
	opts := strings.Join(sb.Opts, " ")
	for _, want := range []string{"Dir::Etc::sourcelist=" + sb.Dir, "Dir::Etc::sourceparts=" + sb.Dir, "Dir::State::Lists=" + sb.Dir, "Dir::Cache=" + sb.Dir} {
		if !strings.Contains(opts, want) {
			t.Errorf("options %q lack %q", opts, want)
		}
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sb.Dir); !os.IsNotExist(err) {
		t.Error("sandbox not removed")
	}
}
