package modules

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

// The list roles' loops once ran over the users' dicts: Ansible prints a
// loop's item with each result from -v on, so a VM's cipassword, a
// storage's password and any api_password in the dicts were printed in
// clear, whatever the module masked. They now loop over indexes and hand
// the secrets to the module as options, which the module declares no_log.
// Proven with the real module and the real ansible-playbook at -vvv, on
// this machine (no lab: the API address refuses connections, so each
// module call fails after its arguments were validated and masked).
const roleSecretsPlaybook = `- name: The list roles with secrets in their dicts
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/gopve.proxmox.api:
      api_host: 127.0.0.1
      api_port: 1
      api_user: root@pam
      api_password: "{{ api_pw }}"
      validate_certs: false
  tasks:
    - name: Extra storages, one holding a CIFS password
      ansible.builtin.include_role:
        name: gopve.proxmox.pve_storage
        apply: {ignore_errors: true}
      vars:
        zfs_pool_name: tank
        pve_storage_zfs_nodes: [localhost]
        pve_storage_local_content: []
        pve_storage_extra:
          - {storage: cifs1, type: cifs, server: nas.invalid, share: b,
             username: u, password: "{{ cifs_pw }}"}
    - name: A VM with a cloud-init password and its own api_password
      ansible.builtin.include_role:
        name: gopve.proxmox.pve_clone
        apply: {ignore_errors: true}
      vars:
        pve_clone_vms:
          - {vmid: 100, name: v, template: "9000", cipassword: "{{ ci_pw }}",
             api_password: "{{ vm_api_pw }}"}
    - name: A guest with its own api_password
      ansible.builtin.include_role:
        name: gopve.proxmox.pve_ha
        apply: {ignore_errors: true}
      vars:
        pve_ha_guests:
          - {vmid: 100, type: vm, api_password: "{{ guest_api_pw }}"}
`

func TestRoleSecretsNotInLoopItems(t *testing.T) {
	testenv.NeedTools(t, "ansible-playbook", "go")
	testenv.NeedLong(t, "builds gopve and runs ansible-playbook")
	repo := repoRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "gopve")
	build := exec.Command("go", "build", "-o", bin, "./modules-src/cmd/gopve")
	build.Dir, build.Env = repo, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building gopve: %v\n%s", err, out)
	}
	coll := labtest.InstallCollection(t, repo, bin)
	pb := filepath.Join(dir, "secrets.yml")
	if err := os.WriteFile(pb, []byte(roleSecretsPlaybook), 0o644); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{}
	args := []string{"-vvv", "-i", "localhost,", pb}
	for _, v := range []string{"api_pw", "cifs_pw", "ci_pw", "vm_api_pw", "guest_api_pw"} {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		secrets[v] = "role-secret-" + v + "-" + hex.EncodeToString(b)
		args = append(args, "-e", v+"="+secrets[v])
	}
	cmd := exec.Command("ansible-playbook", args...)
	cmd.Env = append(os.Environ(), "ANSIBLE_COLLECTIONS_PATH="+coll, "ANSIBLE_NOCOLOR=1",
		"ANSIBLE_LOCALHOST_WARNING=0", "ANSIBLE_RETRY_FILES_ENABLED=0")
	cmd.Dir = dir
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	if err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	for v, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%s is in the output:\n%s", v, out)
		}
	}
	// The secrets reached the modules (which masked them): else their
	// absence above would prove nothing.
	for _, want := range []string{
		`"password": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"`,
		`"cipassword": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"`,
		`"api_password": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in the output: the module did not get that secret\n%s", want, out)
		}
	}
	for _, task := range []string{"Declare the extra storages", "VMs of the list, one at a time", "Make the guests highly available"} {
		if !strings.Contains(out, task+"] ") {
			t.Errorf("task %q did not run:\n%s", task, out)
		}
	}
	if strings.Contains(out, "argsplat") {
		t.Errorf("ansible-core warned that a task's args come from a variable:\n%s", out)
	}
}
