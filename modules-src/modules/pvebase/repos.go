package pvebase

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/apt"
)

// base carries what one run learns from stage to stage.
type base struct {
	r   *ansible.Run
	env Env
	p   params

	suite   string
	format  apt.Format
	files   map[string]*apt.File // every repository file, as the run leaves it
	before  map[string]host.FileState
	repos   []repoDef
	changed bool // a repository file changes in this run

	// extraInstalled is what dpkg said of extra_packages when the target
	// was checked (guardTarget): the packages stage plans from it, since
	// nothing before it (repository files, the cache refresh) installs or
	// removes a package, and a no-op run asks dpkg once (issue 24 §3).
	extraInstalled map[string]string

	client  apt.Client   // APT as the packages stages must see it
	sandbox *apt.Sandbox // check mode only

	installPlan apt.Plan
	upgradePlan apt.Plan
	upgraded    []apt.Pkg
	reboot      []string // reasons a reboot is pending
	held        []string // packages on hold (apt-mark showhold)
	heldBack    []string // held packages the upgrade skipped
}

// repoDef is one of the four Proxmox repositories this module manages.
type repoDef struct {
	Name      string // pve-enterprise …
	Option    string // the option choosing its state
	Want      string // enabled | disabled
	URI       string
	Component string
	File      string // base name of the file we create, without extension
}

// Default repository URLs; Ceph ones take the release.
const (
	defPVEEnterprise     = "https://enterprise.proxmox.com/debian/pve"
	defPVENoSubscription = "http://download.proxmox.com/debian/pve"
	defCephEnterprise    = "https://enterprise.proxmox.com/debian/ceph-{ceph_release}"
	defCephNoSub         = "http://download.proxmox.com/debian/ceph-{ceph_release}"
	defSignedBy          = "/usr/share/keyrings/proxmox-archive-keyring.gpg"
)

func (m *base) url(key, def, cephRelease string) string {
	u := def
	if v := m.p.RepositoryURLs[key]; v != "" {
		u = v
	}
	return strings.TrimRight(strings.ReplaceAll(u, "{ceph_release}", cephRelease), "/")
}

// cephReleaseOnNode finds the Ceph release already configured (any entry
// whose URI ends in /ceph-<release>), so a node on reef is not switched to
// squid behind the user's back.
func cephReleaseOnNode(files map[string]*apt.File) string {
	names := slices.Sorted(maps.Keys(files))
	for _, n := range names {
		for _, e := range files[n].Entries() {
			for _, u := range e.URIs {
				b := path.Base(strings.TrimRight(u, "/"))
				if rel, ok := strings.CutPrefix(b, "ceph-"); ok && rel != "" {
					return rel
				}
			}
		}
	}
	return ""
}

// planRepos is stage 1.
func (m *base) planRepos(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	if err := m.guardTarget(ctx); err != nil {
		return nil, err
	}
	if err := m.pickSuite(); err != nil {
		return nil, err
	}
	m.pickFormat()
	m.warnSignedByList()
	if err := m.readSources(); err != nil {
		return nil, err
	}
	m.repos = m.repoDefs(m.cephRelease())
	why := map[string][]string{} // file → what we do to it
	for _, d := range m.repos {
		acts, err := m.converge(d)
		if err != nil {
			return nil, err
		}
		for f, a := range acts {
			why[f] = append(why[f], a)
		}
	}
	changes := m.sourceChanges(why)
	m.changed = len(changes) > 0
	return changes, nil
}

// pickSuite is the asked suite, else the node's (os-release).
func (m *base) pickSuite() error {
	m.suite = m.p.Suite
	if m.suite != "" {
		return nil
	}
	osr, err := apt.ReadOSRelease(m.env.Root)
	if err != nil {
		return fmt.Errorf("suite: %w", err)
	}
	m.suite = osr.VersionCodename
	return nil
}

// pickFormat is the asked format of new entries, else the suite's own.
func (m *base) pickFormat() {
	switch m.p.RepoFormat {
	case "deb822":
		m.format = apt.Deb822
	case "list":
		m.format = apt.OneLine
	default:
		// Debian 12 and older read .list; deb822 became the default in 13 (B1).
		m.format = apt.Deb822
		if m.suite == "bookworm" || m.suite == "bullseye" || m.suite == "buster" {
			m.format = apt.OneLine
		}
	}
}

// readSources reads every APT source file and its state before, which
// the file changes are planned from.
func (m *base) readSources() error {
	files, err := apt.ReadAll(m.env.Root)
	if err != nil {
		return err
	}
	m.files, m.before = map[string]*apt.File{}, map[string]host.FileState{}
	for _, f := range files {
		m.files[f.Path] = f
		st, err := m.env.Root.ReadFile(f.Path)
		if err != nil {
			return err
		}
		m.before[f.Path] = st
	}
	return nil
}

// cephRelease is the asked Ceph release, else the one the node's sources
// name, else the suite's default.
func (m *base) cephRelease() string {
	if m.p.CephRelease != "" {
		return m.p.CephRelease
	}
	if ceph := cephReleaseOnNode(m.files); ceph != "" {
		return ceph
	}
	if m.suite == "bookworm" {
		return "reef"
	}
	return "squid"
}

func (m *base) repoDefs(ceph string) []repoDef {
	return []repoDef{
		{"pve-enterprise", "enterprise_repo", m.p.EnterpriseRepo, m.url("pve_enterprise", defPVEEnterprise, ceph), "pve-enterprise", "pve-enterprise"},
		{"pve-no-subscription", "no_subscription_repo", m.p.NoSubscriptionRepo, m.url("pve_no_subscription", defPVENoSubscription, ceph), "pve-no-subscription", "pve-no-subscription"},
		{"ceph-enterprise", "ceph_enterprise_repo", m.p.CephEnterpriseRepo, m.url("ceph_enterprise", defCephEnterprise, ceph), "enterprise", "ceph"},
		{"ceph-no-subscription", "ceph_no_subscription_repo", m.p.CephNoSubscriptionRepo, m.url("ceph_no_subscription", defCephNoSub, ceph), "no-subscription", "ceph-no-subscription"},
	}
}

// sourceChanges is one file change per source file that differs from the
// node's, summarised by why (file → what we do to it).
func (m *base) sourceChanges(why map[string][]string) []ansible.Change {
	var changes []ansible.Change
	for _, p := range slices.Sorted(maps.Keys(m.files)) {
		f := m.files[p]
		mode := m.before[p].Mode
		if m.owned(p) || !m.before[p].Exists {
			mode = 0o644 // files we own are 0644 whatever they were
		}
		fc := host.PlanFrom(m.before[p], f.Bytes(), mode)
		if fc == nil {
			continue
		}
		summary := strings.Join(why[p], ", ")
		if summary == "" {
			summary = "set mode 0644"
		}
		changes = append(changes, m.fileChange("repo:"+p, summary+" in "+p, fc))
	}
	return changes
}

// owned tells whether a file is one of the repository files named after the
// repositories this module manages.
func (m *base) owned(p string) bool {
	if path.Dir(p) != apt.SourcesDir {
		return false
	}
	b := path.Base(p)
	for _, d := range m.repos {
		if b == d.File+".sources" || b == d.File+".list" {
			return true
		}
	}
	return false
}

// fileChange wraps a planned file write as a driver change.
func (m *base) fileChange(id, summary string, fc *host.FileChange) ansible.Change {
	d := fc.Diff()
	return ansible.Change{
		ID:      id,
		Summary: summary,
		Diff:    &ansible.Diff{Before: d.Before, After: d.After, BeforeHeader: d.BeforeHeader, AfterHeader: d.AfterHeader},
		Apply: func(ctx context.Context) error {
			_, err := m.env.Root.ApplyFile(ctx, fc, m.env.Now())
			return fileApplyError(err)
		},
		Verify: func(context.Context) error { return m.env.Root.VerifyFile(fc) },
	}
}

// fileApplyError tells the driver when a failed file write changed
// nothing: the compare-and-swap found the file edited since it was read
// and left it alone.
func fileApplyError(err error) error {
	var conflict *host.ConflictError
	if errors.As(err, &conflict) {
		return ansible.NothingChanged(err)
	}
	return err
}

type match struct {
	file  *apt.File
	entry apt.Entry
}

func (m *base) matches(d repoDef) []match {
	var out []match
	for _, p := range slices.Sorted(maps.Keys(m.files)) {
		f := m.files[p]
		for _, e := range f.Entries() {
			if e.HasURI(d.URI) && e.HasComponent(d.Component) && slices.Contains(e.Types, "deb") {
				out = append(out, match{f, e})
			}
		}
	}
	return out
}

// converge edits m.files so repository d ends in its wanted state, and says
// what it did per file.
func (m *base) converge(d repoDef) (map[string]string, error) {
	ms := m.matches(d)
	if d.Want == stateDisabled {
		return disableAll(d, ms)
	}
	// enabled: every enabled entry must carry the node's suite; when none is
	// enabled, the one in our own file (else the first found) is re-enabled;
	// when there is none, it is added to our own file.
	acts, anyEnabled, err := m.fixSuites(d, ms)
	if err != nil || anyEnabled {
		return acts, err
	}
	if len(ms) > 0 {
		return m.enableOne(d, ms)
	}
	return m.addRepo(d)
}

// disableAll disables every enabled entry of repository d.
func disableAll(d repoDef, ms []match) (map[string]string, error) {
	acts := map[string]string{}
	for _, x := range ms {
		if x.entry.Enabled {
			if err := x.file.SetEnabled(x.entry.Index, false); err != nil {
				return nil, err
			}
			acts[x.file.Path] = "disable " + d.Name
		}
	}
	return acts, nil
}

// fixSuites sets the node's suite on every enabled entry of repository d
// that lacks it, and says whether any entry is enabled.
func (m *base) fixSuites(d repoDef, ms []match) (map[string]string, bool, error) {
	acts := map[string]string{}
	anyEnabled := false
	for _, x := range ms {
		if !x.entry.Enabled {
			continue
		}
		anyEnabled = true
		if !slices.Contains(x.entry.Suites, m.suite) {
			if err := x.file.SetSuites(x.entry.Index, m.suite); err != nil {
				return nil, false, err
			}
			acts[x.file.Path] = fmt.Sprintf("set suite %s for %s", m.suite, d.Name)
		}
	}
	return acts, anyEnabled, nil
}

// enableOne re-enables one disabled entry of repository d: the one in our
// own file, else the first found, with the node's suite.
func (m *base) enableOne(d repoDef, ms []match) (map[string]string, error) {
	pick := ms[0]
	for _, x := range ms {
		if m.owned(x.file.Path) && strings.HasPrefix(path.Base(x.file.Path), d.File+".") {
			pick = x
			break
		}
	}
	if err := pick.file.SetEnabled(pick.entry.Index, true); err != nil {
		return nil, err
	}
	if !slices.Contains(pick.entry.Suites, m.suite) {
		if err := pick.file.SetSuites(pick.entry.Index, m.suite); err != nil {
			return nil, err
		}
	}
	return map[string]string{pick.file.Path: "enable " + d.Name}, nil
}

// addRepo writes repository d, absent from the node, into our own file
// (appended if that file exists for another reason).
func (m *base) addRepo(d repoDef) (map[string]string, error) {
	ext, text := ".sources", ""
	if m.format == apt.OneLine {
		ext = ".list"
		text = apt.ListLine(d.URI, m.suite, []string{d.Component}, true)
	} else {
		signed := defSignedBy
		if m.p.SignedBy != nil {
			signed = *m.p.SignedBy
		}
		text = apt.Stanza([]string{"deb"}, []string{d.URI}, []string{m.suite}, []string{d.Component}, signed, true)
	}
	p := path.Join(apt.SourcesDir, d.File+ext)
	var content []byte
	if f, ok := m.files[p]; ok {
		content = f.Bytes()
		if len(content) > 0 && content[len(content)-1] != '\n' {
			content = append(content, '\n')
		}
		if m.format == apt.Deb822 && len(content) > 0 {
			content = append(content, '\n')
		}
	} else {
		m.before[p] = host.FileState{Path: p, UID: -1, GID: -1}
	}
	content = append(content, text...)
	f, err := apt.ParseFile(p, m.format, content)
	if err != nil {
		return nil, fmt.Errorf("internal error rendering %s: %w", p, err)
	}
	m.files[p] = f
	return map[string]string{p: "add " + d.Name}, nil
}

// repoReport is one repository in the result.
type repoReport struct {
	Name  string   `json:"name"`
	State string   `json:"state"` // enabled, disabled, absent
	URI   string   `json:"uri"`
	Suite string   `json:"suite"`
	Files []string `json:"files"`
}

func (m *base) repoReports() []repoReport {
	var out []repoReport
	for _, d := range m.repos {
		rep := repoReport{Name: d.Name, State: "absent", URI: d.URI, Suite: m.suite, Files: []string{}}
		for _, x := range m.matches(d) {
			if !slices.Contains(rep.Files, x.file.Path) {
				rep.Files = append(rep.Files, x.file.Path)
			}
			switch {
			case x.entry.Enabled:
				rep.State = stateEnabled
			case rep.State == "absent":
				rep.State = stateDisabled
			}
		}
		out = append(out, rep)
	}
	return out
}
