package labctl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/nodecert"
)

// TestLabPitfalls shows, on one lab, that the lab reproduces the cluster
// pitfalls that only a real node (files, name service, sshd, Ansible)
// can show: C1, C3, C8 and S3. C9 is pure API: pvesim's
// TestDelnodeLeavesRemovedNodeClusteredC9. PVE 8 on purpose: its nodes are
// overlays of this machine's own root, so a leak of the host's /etc/hosts
// or name service into a node would show here first.
func TestLabPitfalls(t *testing.T) {
	t.Parallel()
	lab := startLab(t, 8)
	nodes := lab.Nodes()
	domain := "lab.internal"

	// C1: a fresh node resolves only itself; the others need /etc/hosts
	// lines (the cluster must not depend on DNS).
	t.Run("C1_members_resolve_only_through_etc_hosts", func(t *testing.T) {
		for _, n := range nodes {
			own := onNode(t, lab, n.Name, "getent hosts "+n.Name)
			if !strings.HasPrefix(own, n.Addr+" ") {
				t.Errorf("%s does not resolve its own name from the installer's line: %q", n.Name, own)
			}
			// getent goes through nsswitch (files, dns, whatever the node
			// has): exit 2 is "not found" by every source.
			var script, want strings.Builder
			for _, m := range nodes {
				if m.Name == n.Name {
					continue
				}
				for _, name := range []string{m.Name, m.Name + "." + domain} {
					fmt.Fprintf(&script, "getent hosts %s; echo \"%s $?\"\n", name, name)
					fmt.Fprintf(&want, "%s 2\n", name)
				}
			}
			if got := onNode(t, lab, n.Name, script.String()); got != want.String() {
				t.Errorf("fresh %s resolves other members:\n%s\nwant every lookup to fail (exit 2): a lab node must find members only through /etc/hosts (C1)",
					n.Name, got)
			}
		}
		// The node's /etc/hosts is its own file in its own layer, not the
		// host's showing through the overlay.
		inNode := onNode(t, lab, "pve01", "cat /etc/hosts")
		upper, err := os.ReadFile(lab.UpperPath("pve01", "/etc/hosts"))
		if err != nil || string(upper) != inNode {
			t.Errorf("pve01's /etc/hosts is not the one in its layer (%v):\n%s", err, inNode)
		}
		if host, _ := os.ReadFile("/etc/hosts"); string(host) == inNode {
			t.Errorf("pve01 sees the host's /etc/hosts")
		}

		// What pve_base does for C1: every member's IP FQDN SHORT line.
		onNode(t, lab, "pve01", "cp -p /etc/hosts /root/hosts.c1")
		defer onNode(t, lab, "pve01", "mv /root/hosts.c1 /etc/hosts")
		var add strings.Builder
		for _, m := range nodes[1:] {
			fmt.Fprintf(&add, "%s %s.%s %s\n", m.Addr, m.Name, domain, m.Name)
		}
		onNode(t, lab, "pve01", "cat >> /etc/hosts <<'E'\n"+add.String()+"E")
		for _, m := range nodes[1:] {
			want := fmt.Sprintf("%s %s.%s %s", m.Addr, m.Name, domain, m.Name)
			if got := strings.Join(strings.Fields(onNode(t, lab, "pve01", "getent hosts "+m.Name)), " "); got != want {
				t.Errorf("after the hosts lines pve01 resolves %s as %q, want %q", m.Name, got, want)
			}
		}
		// Per node: pve02 has not been given the lines.
		if res, _ := lab.Run(context.Background(), "pve02", "getent hosts pve03", nil); res.ExitCode == 0 {
			t.Errorf("pve02 resolves pve03 although only pve01's /etc/hosts changed: %q", res.Stdout)
		}
	})

	// C3: the real ssh-keyscan against a lab node prints a comment line
	// besides the key; appending its output grows known_hosts on every run,
	// while a guarded, exact update stays put.
	t.Run("C3_keyscan_comments_duplicate_on_append", func(t *testing.T) {
		peer := nodes[1]
		res, err := lab.Run(context.Background(), "pve01", "ssh-keyscan -t ed25519 "+peer.Addr, nil)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("ssh-keyscan: %v exit %d %s", err, res.ExitCode, res.Stderr)
		}
		comment := regexp.MustCompile(`(?m)^# ` + regexp.QuoteMeta(peer.Addr) + `:22 SSH-2\.0-OpenSSH_\S+`)
		if !comment.MatchString(res.Stderr) {
			t.Errorf("ssh-keyscan printed no `# %s:22 SSH-2.0-OpenSSH_…` comment on stderr (C3):\n%s", peer.Addr, res.Stderr)
		}
		hostKey := keyOf(t, lab, peer)
		if got := strings.TrimSpace(res.Stdout); got != peer.Addr+" "+hostKey {
			t.Errorf("ssh-keyscan stdout %q, want the node's real key %q", got, peer.Addr+" "+hostKey)
		}

		// The naive role: `ssh-keyscan HOST >> known_hosts 2>&1`, every run.
		naive := onNode(t, lab, "pve01", fmt.Sprintf(`kh=$(mktemp); for i in 1 2; do ssh-keyscan -t ed25519 %s >> $kh 2>&1; wc -l < $kh; done
echo dups; sort $kh | uniq -d; rm -f $kh`, peer.Addr))
		counts, dups, _ := strings.Cut(naive, "dups\n")
		if c := strings.Fields(counts); len(c) != 2 || c[0] != "2" || c[1] != "4" {
			t.Errorf("appending raw ssh-keyscan output twice: line counts %v, want [2 4] (comment + key each run)", c)
		}
		if !comment.MatchString(dups) || !strings.Contains(dups, peer.Addr+" "+hostKey) {
			t.Errorf("the second append should duplicate the comment and the key line:\n%s", dups)
		}

		// The seed's fix: ssh-keygen -F first, keys only (stdout), exact.
		guarded := onNode(t, lab, "pve01", fmt.Sprintf(`kh=$(mktemp); for i in 1 2; do
if ssh-keygen -F %[1]s -f $kh >/dev/null 2>&1; then echo present; else ssh-keyscan -t ed25519 %[1]s 2>/dev/null >> $kh; echo added; fi
done; wc -l < $kh; grep -c '^#' $kh; rm -f $kh`, peer.Addr))
		if got := strings.Fields(guarded); strings.Join(got, " ") != "added present 1 0" {
			t.Errorf("guarded update: %v, want [added present 1 0] (idempotent, no comment lines)", got)
		}
	})

	// C8: PVE knows nodes by their own names. An inventory alias reaches the
	// right machine over SSH, but the join information has no entry for it;
	// the name to look up is the one the node gives (hostname, /nodes).
	t.Run("C8_join_info_by_node_name_not_alias", func(t *testing.T) {
		alias := writeAliasInventory(t, lab, "pve02", "node-b")
		out, err := ansibleWith(t, alias, "ansible", "node-b", "-m", "ansible.builtin.command", "-a", "hostname")
		if err != nil || !regexp.MustCompile(`(?m)^node-b \| CHANGED \| rc=0 >>\npve02$`).MatchString(out) {
			t.Fatalf("the alias must reach pve02, whose hostname is pve02: %v\n%s", err, out)
		}

		if _, err := lab.Sim().CreateCluster("pve01", "c8", nodes[0].Addr); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			_, err := lab.Sim().AddNode("pve01", "pve02", nodes[1].Addr, false)
			return err == nil
		}, "pve02 could not join")

		var join struct {
			Nodelist []struct {
				Name string `json:"name"`
				FP   string `json:"pve_fp"`
			} `json:"nodelist"`
		}
		var names []string
		waitFor(t, func() bool {
			names = nil
			if err := labAPI(lab, "pve01", "/cluster/config/join", &join); err != nil {
				return false
			}
			for _, e := range join.Nodelist {
				names = append(names, e.Name)
			}
			return len(names) == 2
		}, "the join information never listed two members")
		fpOf := func(name string) string {
			for _, e := range join.Nodelist {
				if e.Name == name {
					return e.FP
				}
			}
			return ""
		}
		if fp := fpOf("node-b"); fp != "" {
			t.Errorf("join info answered for the inventory alias node-b: %s (names %v)", fp, names)
		}
		self := strings.TrimSpace(onNode(t, lab, "pve02", "hostname"))
		var apiNodes []struct {
			Node string `json:"node"`
		}
		if err := labAPI(lab, "pve02", "/nodes", &apiNodes); err != nil {
			t.Fatal(err)
		}
		listed := false
		for _, n := range apiNodes {
			listed = listed || n.Node == self
		}
		info, _ := lab.Sim().Node("pve02")
		if !listed || fpOf(self) != info.Fingerprint || info.Fingerprint == "" {
			t.Errorf("the node's own name %q (in /nodes: %v) must find its fingerprint %s in the join info %v",
				self, listed, info.Fingerprint, join.Nodelist)
		}
	})

	// S3: a play's hosts are templated before inventory variables exist, so
	// a group variable there is undefined; targeting the group works.
	t.Run("S3_group_var_in_play_hosts_is_undefined", func(t *testing.T) {
		dir := t.TempDir()
		bad := filepath.Join(dir, "bad.yml")
		good := filepath.Join(dir, "good.yml")
		writeFile(t, bad, `- hosts: "{{ pve_cluster_primary }}"
  gather_facts: false
  tasks:
    - ansible.builtin.command: hostname
`)
		writeFile(t, good, `- hosts: pve
  gather_facts: false
  tasks:
    - name: Only on the primary
      ansible.builtin.command: hostname
      register: primary
      changed_when: false
      when: inventory_hostname == pve_cluster_primary
    - ansible.builtin.debug:
        msg: "WHEN_RAN_ON={{ primary.stdout }}"
      when: inventory_hostname == pve_cluster_primary
    - name: Once, on the primary
      ansible.builtin.command: hostname
      register: once
      changed_when: false
      run_once: true
      delegate_to: "{{ pve_cluster_primary }}"
    - ansible.builtin.debug:
        msg: "RUN_ONCE_RAN_ON={{ once.stdout }}"
      run_once: true
`)
		out, err := ansibleWith(t, lab.Inventory(), "ansible-playbook", bad)
		if err == nil || !strings.Contains(out, "'pve_cluster_primary' is undefined") {
			t.Errorf("hosts: \"{{ pve_cluster_primary }}\" must fail with 'pve_cluster_primary' is undefined (S3): %v\n%s", err, out)
		}
		out, err = ansibleWith(t, lab.Inventory(), "ansible-playbook", good)
		if err != nil {
			t.Fatalf("targeting the group failed: %v\n%s", err, out)
		}
		if strings.Count(out, "WHEN_RAN_ON=pve01") != 1 || strings.Count(out, "RUN_ONCE_RAN_ON=pve01") != 1 {
			t.Errorf("the group play must run the primary's tasks once, on pve01:\n%s", out)
		}
		if !regexp.MustCompile(`pve02\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0\s+skipped=[1-9]`).MatchString(out) {
			t.Errorf("pve02 must skip the primary-only tasks:\n%s", out)
		}
	})
}

// keyOf is node n's ed25519 host key ("ssh-ed25519 AAAA…") as the lab
// pinned it in its known_hosts.
func keyOf(t *testing.T, lab *Lab, n NodeInfo) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(lab.Dir(), KnownHostsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == n.Addr+","+n.Name && f[1] == "ssh-ed25519" {
			return f[1] + " " + f[2]
		}
	}
	t.Fatalf("no ed25519 key for %s in the lab's known_hosts:\n%s", n.Name, b)
	return ""
}

// writeAliasInventory copies the lab's inventory with node renamed to alias
// (same address, key and variables).
func writeAliasInventory(t *testing.T, lab *Lab, node, alias string) string {
	t.Helper()
	b, err := os.ReadFile(lab.Inventory())
	if err != nil {
		t.Fatal(err)
	}
	from := "\n        " + node + ":\n"
	if !strings.Contains(string(b), from) {
		t.Fatalf("the lab inventory has no host %s:\n%s", node, b)
	}
	p := filepath.Join(t.TempDir(), "alias.yml")
	writeFile(t, p, strings.Replace(string(b), from, "\n        "+alias+":\n", 1))
	return p
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ansibleWith runs a real ansible command against the given inventory.
func ansibleWith(t *testing.T, inventory, bin string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath(bin); err != nil {
		testenv.Skipf(t, "%s is not installed: %v", bin, err)
	}
	cmd := exec.Command(bin, append([]string{"-i", inventory}, args...)...)
	// A short HOME: ssh's control sockets live under it and a subtest's
	// TempDir is longer than a Unix socket path may be.
	home, err := os.MkdirTemp("", "ans")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	cmd.Env = append(os.Environ(), "HOME="+home, "ANSIBLE_NOCOLOR=1", "ANSIBLE_FORCE_COLOR=0",
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(home, "tmp"), "ANSIBLE_RETRY_FILES_ENABLED=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// labAPI GETs path from node's real HTTPS API with the lab token, pinned to
// the node's current certificate, and decodes `data` into v.
func labAPI(lab *Lab, node, path string, v any) error {
	info, ok := lab.Sim().Node(node)
	if !ok {
		return fmt.Errorf("no node %s", node)
	}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // verified below by pinning the fingerprint, as PVE clients do
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if got := nodecert.Fingerprint(raw[0]); got != info.Fingerprint {
				return fmt.Errorf("fingerprint %s, want %s", got, info.Fingerprint)
			}
			return nil
		}}}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest("GET", info.URL+path, nil)
	if err != nil {
		return err
	}
	creds := lab.Credentials()
	req.Header.Set("Authorization", "PVEAPIToken="+creds.TokenID+"="+creds.TokenSecret)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s on %s: %s", path, node, resp.Status)
	}
	return json.Unmarshal(body, &struct {
		Data any `json:"data"`
	}{Data: v})
}
