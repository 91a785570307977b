package pvestorage

// The role's pve_storage_extra as users run it (playbooks/storage.yml, the
// real ansible-playbook, a 3-node cluster): each extra storage's dict goes
// to the module option by option (no argsplat), so what the lab must see
// is exactly what the dict says. A key that is no option of the module is
// refused before the role's first write, the ZFS storage included: the
// request log holds no write at all (S1, S3).

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

func TestLabPlaybookExtraStoragesPVE9(t *testing.T) {
	t.Parallel()
	lab, bin := labtest.Start(t, 9, 3)
	l := &labRun{t: t, lab: lab, sim: lab.Sim()}
	labtest.FormCluster(t, lab)
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	writeVars := func(extra string) string {
		p := filepath.Join(t.TempDir(), "pve.yml")
		if err := os.WriteFile(p, []byte(seedVars+"pve_storage_extra:\n"+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if out, err := labtest.Playbook(t, lab, coll, writeVars("  []\n"), filepath.Join(repo, "playbooks", "zfs.yml")); err != nil {
		t.Fatalf("zfs.yml: %v\n%s", err, out)
	}
	pb := filepath.Join(repo, "playbooks", "storage.yml")

	// A misspelt option in the second extra storage: refused, named, and
	// nothing written, not even the ZFS storage the role declares first.
	l.sim.ResetRequests()
	bad := writeVars(`  - {storage: backup-dir, type: dir, path: /srv/backup, content: [backup]}
  - {storage: iso-dir, type: dir, path: /srv/iso, contnet: [iso]}
`)
	out, err := labtest.Playbook(t, lab, coll, bad, pb)
	if err == nil || !strings.Contains(out, "Unsupported parameters for (gopve.proxmox.pve_storage) module: contnet") ||
		!strings.Contains(out, "storage iso-dir") {
		t.Fatalf("an unknown key in pve_storage_extra: want the run to fail naming contnet and iso-dir, got %v:\n%s", err, out)
	}
	if w := l.writes(); len(w) != 0 {
		t.Errorf("the refused run wrote %+v", w)
	}
	if !regexp.MustCompile(`(?m)^pve01\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1 `).MatchString(out) {
		t.Errorf("the refused run: want pve01 failed with nothing changed:\n%s", out)
	}

	// The dicts as given, a null dropping the option (disable unset).
	good := writeVars(`  - {storage: backup-dir, type: dir, path: /srv/backup, content: [backup], nodes: [pve01, pve02], disable: null}
`)
	l.sim.ResetRequests()
	out, err = labtest.Playbook(t, lab, coll, good, pb)
	if err != nil {
		t.Fatalf("storage.yml with an extra storage: %v\n%s", err, out)
	}
	posts := 0
	for _, r := range l.writes() {
		if r.Method == "POST" && r.Path == "/storage" {
			posts++
		}
	}
	if posts != 2 || labtest.RecapChanged(t, out, "pve01") != 3 {
		t.Errorf("want the ZFS and the extra storage created, local updated (3 changed), got %d creates, writes %+v:\n%s", posts, l.writes(), out)
	}
	seen := strings.ReplaceAll(l.ssh("pve03", "pvesh get /storage/backup-dir --output-format json"), " ", "")
	for _, want := range []string{`"type":"dir"`, `"path":"/srv/backup"`, `"content":"backup"`, `"nodes":"pve01,pve02"`} {
		if !strings.Contains(seen, want) {
			t.Errorf("S1: pve03 sees %s, want %s", seen, want)
		}
	}
	if strings.Contains(seen, `"disable"`) {
		t.Errorf("disable: null reached PVE: %s", seen)
	}

	l.sim.ResetRequests()
	again, err := labtest.Playbook(t, lab, coll, good, pb)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, again)
	}
	if c := labtest.RecapChanged(t, again, "pve01"); c != 0 || len(l.writes()) != 0 {
		t.Errorf("second run: changed %d, writes %+v:\n%s", c, l.writes(), again)
	}
	if strings.Contains(out+again, "argsplat") {
		t.Errorf("ansible-core warned that a task's args come from a variable:\n%s", out)
	}
}
