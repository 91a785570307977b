package pveaccess

// The role as a site runs it: playbooks/site.yml's phases up to access
// (base, zfs, cluster, access) under the real ansible-playbook on a fresh
// 2-node lab create automation@pve, a custom role, a privsep token and its
// ACL entries. The check run writes nothing (every node's upper dir, the
// request log) and predicts exactly the tasks the real run changes (the
// token's check run meets a user only the task before it creates:
// created_earlier, K15); the rerun changes nothing. A second play of the
// same run, on the controller, declares the storage phase through the new
// token (module_defaults for group/gopve.proxmox.api fed from the fact
// pve_access_token_secrets); its rerun, with the secret kept as a user
// keeps it (a vault), changes nothing. The secret is in no playbook output
// and in no file the nodes wrote but PVE's own priv/token.cfg.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

const siteVars = `zfs_pool_name: nvme-vm
zfs_pool_device: /dev/nvme0n1
zfs_arc_max_gb: 4
pve_cluster_primary: pve01
lab_domain: lab.example
pve_access_users:
  - {userid: automation@pve, comment: gopve automation}
pve_access_roles:
  - roleid: GopveAutomation
    privileges: [Datastore.Allocate, Datastore.Audit, Sys.Audit]
pve_access_tokens:
  - {userid: automation@pve, tokenid: gopve, comment: site, privsep: true}
pve_access_acls:
  - path: /
    roles: [GopveAutomation]
    users: [automation@pve]
    tokens: ["automation@pve!gopve"]
`

// viaToken is the second play: the storage role, run on the controller
// through pve01's API as the token created by the access phase. Its
// module_defaults are templated even when --tags leaves the play out (the
// role's argument validation is tagged always), hence the default with an empty string.
const viaToken = `- name: The site's phases
  ansible.builtin.import_playbook: %s

- name: Cluster storage through the automation token, from the controller
  hosts: pve
  gather_facts: false
  tags: [viatoken]
  vars:
    ansible_connection: local
    ansible_become: false
    # Declared by the role's loop task, which passes every option as
    # "{{ ... | default(omit) }}": module_defaults must still reach it.
    pve_storage_extra:
      - {storage: tokdir, type: dir, path: /var/lib/tokdir, content: [iso]}
  module_defaults:
    group/gopve.proxmox.api:
      api_host: "{{ api_addr }}"
      api_fingerprint: "{{ api_fp }}"
      api_token_id: automation@pve!gopve
      api_token_secret: >-
        {{ kept_secret | default(hostvars[pve_cluster_primary].pve_access_token_secrets['automation@pve!gopve']
           | default('')) }}
  roles:
    - role: gopve.proxmox.pve_storage
`

// changedTasks lists "task [host]" for every changed line of a run, in
// order, to compare a check run's prediction with the real run's changes.
func changedTasks(out string) []string {
	var got []string
	task := ""
	re := regexp.MustCompile(`^changed: (\[[^\]]+\])`)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "TASK [") {
			task = strings.TrimRight(strings.TrimPrefix(line, "TASK "), " *")
		} else if m := re.FindStringSubmatch(line); m != nil {
			got = append(got, task+" "+m[1])
		}
	}
	return got
}

func TestLabSiteAccessTokenPVE9(t *testing.T) { testSiteAccessToken(t, 9) }
func TestLabSiteAccessTokenPVE8(t *testing.T) { testSiteAccessToken(t, 8) }

func testSiteAccessToken(t *testing.T, pve int) {
	lab, bin := labtest.Start(t, pve, 2)
	sim := lab.Sim()
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	dir := t.TempDir()
	info, _ := sim.Node("pve01")
	vars := filepath.Join(dir, "pve.yml")
	if err := os.WriteFile(vars, []byte(siteVars+fmt.Sprintf("api_addr: %q\napi_fp: %q\n", info.Addr, info.Fingerprint)), 0o600); err != nil {
		t.Fatal(err)
	}
	pb := filepath.Join(dir, "site-and-token.yml")
	if err := os.WriteFile(pb, []byte(fmt.Sprintf(viaToken, filepath.Join(repo, "playbooks", "site.yml"))), 0o644); err != nil {
		t.Fatal(err)
	}
	phases := "--tags=base,zfs,cluster,access"
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }

	// Check run: nothing written, the token's missing user assumed.
	var check string
	sim.ResetRequests()
	labtest.NoWrites(t, lab, "site --check", func() {
		var err error
		if check, err = labtest.Playbook(t, lab, coll, vars, pb, "--check", "--diff", phases); err != nil {
			t.Fatalf("site --check: %v\n%s", err, check)
		}
	})
	for _, r := range sim.Requests() {
		if r.Mutating() && !(r.Method == "POST" && r.Path == "/access/ticket") {
			t.Errorf("site --check sent an API write: %s %s", r.Method, r.Path)
		}
	}
	// The token task's warnings are hidden by its no_log; that it is
	// predicted at all (below) proves its user was assumed: without
	// created_earlier.users it fails ("user ... does not exist").
	if !strings.Contains(squeeze(check), squeeze("roles: role GopveAutomation does not exist yet")) {
		t.Errorf("K15: the ACL task's check run did not assume its role (created_earlier.roles):\n%s", check)
	}

	// Real run, then the token play in the same run (the only run that
	// sees the secret).
	sim.ResetRequests()
	real, err := labtest.Playbook(t, lab, coll, vars, pb, phases+",viatoken")
	if err != nil {
		t.Fatalf("site: %v\n%s", err, real)
	}
	// Sorted: hosts of one task answer in any order.
	predicted, changed := changedTasks(check), changedTasks(strings.Split(real, "PLAY [Cluster storage through")[0])
	slices.Sort(predicted)
	slices.Sort(changed)
	if !slices.Equal(predicted, changed) || !slices.Contains(changed, "[gopve.proxmox.pve_access : API tokens] [pve01]") {
		t.Errorf("check predicted:\n  %s\nthe real run changed:\n  %s", strings.Join(predicted, "\n  "), strings.Join(changed, "\n  "))
	}
	cfg, err := lab.SSH("pve02", "cat /etc/pve/user.cfg")
	for _, want := range []string{"user:automation@pve:1:0::::gopve automation::", "role:GopveAutomation:Datastore.Allocate,Datastore.Audit,Sys.Audit:",
		"token:automation@pve!gopve:0:1:site:", "acl:1:/:automation@pve,automation@pve!gopve:GopveAutomation:"} {
		if err != nil || !strings.Contains(cfg, want+"\n") {
			t.Errorf("pve02's user.cfg lacks %q (%v):\n%s", want, err, cfg)
		}
	}
	var viaTok []string
	for _, r := range sim.Requests() {
		if r.Auth == "automation@pve!gopve" && r.Mutating() {
			viaTok = append(viaTok, r.Method+" "+r.Path)
		}
	}
	// Both storages: the ZFS pool (a task without api_* options) and the
	// extra dir storage (the loop task that passes each option with
	// default(omit): Ansible drops module_defaults for an omitted option,
	// the action plugin fills them back).
	if n := slices.Index(viaTok, "POST /storage"); n < 0 || !slices.Contains(viaTok[n+1:], "POST /storage") {
		t.Errorf("the token play did not declare both storages through the token: %v\n%s", viaTok, real)
	}
	if scfg, err := lab.SSH("pve02", "cat /etc/pve/storage.cfg"); err != nil || !strings.Contains(scfg, "dir: tokdir\n") {
		t.Errorf("storage.cfg lacks the extra storage declared through the token (%v):\n%s", err, scfg)
	}

	// The secret, from PVE's own store: in no output, in no other file.
	tokens, err := lab.SSH("pve01", "cat /etc/pve/priv/token.cfg")
	m := regexp.MustCompile(`automation@pve!gopve (\S+)`).FindStringSubmatch(tokens)
	if err != nil || m == nil {
		t.Fatalf("priv/token.cfg has no automation@pve!gopve (%v):\n%s", err, tokens)
	}
	secret := m[1]
	if strings.Contains(check+real, secret) {
		t.Error("the token's secret is in the playbook output")
	}
	for _, n := range lab.Nodes() {
		out, err := exec.Command("grep", "-rlF", "--", secret, lab.UpperPath(n.Name, "/")).Output()
		if x, ok := err.(*exec.ExitError); ok && x.ExitCode() > 1 {
			t.Errorf("grep %s's files: %v %s", n.Name, err, x.Stderr) // 1 is "no match"
		}
		for _, f := range strings.Fields(string(out)) {
			if !strings.HasSuffix(f, "/etc/pve/priv/token.cfg") && !strings.Contains(f, "/pmxcfs/") {
				t.Errorf("the token's secret is in %s's file %s", n.Name, f)
			}
		}
	}

	// Rerun: nothing changes, the token play's secret kept by the user.
	kept := filepath.Join(dir, "kept.yml")
	if err := os.WriteFile(kept, []byte(fmt.Sprintf("kept_secret: %q\n", secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	sim.ResetRequests()
	again, err := labtest.Playbook(t, lab, coll, vars, pb, phases+",viatoken", "-e", "@"+kept)
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, again)
	}
	for _, n := range lab.Nodes() {
		if c := labtest.RecapChanged(t, again, n.Name); c != 0 {
			t.Errorf("rerun changed %d on %s:\n%s", c, n.Name, again)
		}
	}
	tokReads := 0
	for _, r := range sim.Requests() {
		if r.Mutating() && r.Path != "/access/ticket" {
			t.Errorf("rerun wrote: %s %s as %s", r.Method, r.Path, r.Auth)
		}
		if r.Auth == "automation@pve!gopve" {
			tokReads++
		}
	}
	if tokReads == 0 || strings.Contains(again, secret) {
		t.Errorf("rerun: %d reads through the token; the secret printed: %v", tokReads, strings.Contains(again, secret))
	}
}
