package labctl

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// run runs cmd on node and returns its result; an SSH failure is fatal.
func run(t *testing.T, lab *Lab, node, cmd string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := lab.Run(ctx, node, cmd, nil)
	if err != nil {
		t.Fatalf("%s: %s: %v", node, cmd, err)
	}
	return r
}

// Issue 12: /etc/pve in a lab is one filesystem per pmxcfs database, shared
// by the members after create/join, laid out and guarded as pmxcfs does it,
// and the one state the API shows.
func TestLabEtcPveIsOneFilesystem(t *testing.T) {
	t.Parallel()
	lab := startLab(t, 9)
	nodes := lab.Nodes()

	t.Run("layout_as_on_pve", func(t *testing.T) {
		out := onNode(t, lab, "pve02", "readlink /etc/pve/local /root/.ssh/authorized_keys /etc/ssh/ssh_known_hosts; "+
			"stat -c '%U:%G %a %n' /etc/pve/storage.cfg /etc/pve/priv /etc/pve/priv/authorized_keys /etc/pve/nodes/pve02/pve-ssl.pem; "+
			"ls -a /etc/pve; mount | grep ' /etc/pve '")
		for _, want := range []string{"nodes/pve02\n/etc/pve/priv/authorized_keys\n/etc/pve/priv/known_hosts\n",
			"root:www-data 640 /etc/pve/storage.cfg", "root:www-data 700 /etc/pve/priv\n", "root:www-data 600 /etc/pve/priv/authorized_keys",
			"root:www-data 640 /etc/pve/nodes/pve02/pve-ssl.pem", ".members", ".vmlist", "datacenter.cfg", "user.cfg", "qemu-server",
			"/dev/fuse on /etc/pve type fuse.pmxcfs"} {
			if !strings.Contains(out, want) {
				t.Errorf("pve02's /etc/pve lacks %q:\n%s", want, out)
			}
		}
		r := run(t, lab, "pve01", "ln -s storage.cfg /etc/pve/x; chmod 644 /etc/pve/storage.cfg; echo x > /etc/pve/.members")
		for _, want := range []string{"Function not implemented", "Operation not permitted", "Permission denied"} {
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("pmxcfs refusals: want %q in\n%s", want, r.Stderr)
			}
		}
	})

	t.Run("api_and_files_agree", func(t *testing.T) {
		onNode(t, lab, "pve01", "pvesm add dir viaapi --path /srv/viaapi --content iso")
		if out := onNode(t, lab, "pve01", "cat /etc/pve/storage.cfg"); !strings.Contains(out, "dir: viaapi\n\tpath /srv/viaapi\n\tcontent iso\n") {
			t.Errorf("pvesm add did not reach pve01's storage.cfg:\n%s", out)
		}
		if out := onNode(t, lab, "pve02", "cat /etc/pve/storage.cfg"); strings.Contains(out, "viaapi") {
			t.Errorf("standalone pve02 sees pve01's storage:\n%s", out)
		}
		onNode(t, lab, "pve02", `printf 'dir: byhand\n\tpath /srv/byhand\n\tcontent snippets\n\n' >> /etc/pve/storage.cfg`)
		var st map[string]any
		if err := labAPI(lab, "pve02", "/storage/byhand", &st); err != nil || st["path"] != "/srv/byhand" {
			t.Errorf("a storage added to storage.cfg by hand is not what the API shows: %v %v", st, err)
		}
	})

	t.Run("members_share_one_etc_pve", func(t *testing.T) {
		if _, err := lab.Sim().CreateCluster("pve01", "labcluster", nodes[0].Addr); err != nil {
			t.Fatal(err)
		}
		for _, j := range []int{1, 2} {
			if _, err := lab.Sim().AddNode("pve01", nodes[j].Name, nodes[j].Addr, false); err != nil {
				t.Fatal(err)
			}
		}
		want := onNode(t, lab, "pve01", "cat /etc/pve/storage.cfg /etc/pve/corosync.conf")
		for _, n := range []string{"pve02", "pve03"} {
			if got := onNode(t, lab, n, "cat /etc/pve/storage.cfg /etc/pve/corosync.conf"); got != want {
				t.Errorf("%s's /etc/pve differs from pve01's:\n%s\nvs\n%s", n, got, want)
			}
		}
		if strings.Contains(want, "byhand") {
			t.Errorf("Z7: the joiner's storage.cfg survived the join")
		}
		if out := onNode(t, lab, "pve03", "cat /etc/pve/.members; ls /etc/pve/nodes"); !strings.Contains(out, `"nodename": "pve03"`) ||
			!strings.Contains(out, "pve01\npve02\npve03") {
			t.Errorf("pve03 .members / nodes:\n%s", out)
		}
		onNode(t, lab, "pve03", "echo 'shared: yes' > /etc/pve/written-on-pve03.cfg")
		if out := onNode(t, lab, "pve01", "cat /etc/pve/written-on-pve03.cfg"); out != "shared: yes\n" {
			t.Errorf("pve01 does not see pve03's file at once: %q", out)
		}
	})

	// The failure: lineinfile-style writers (read → temp → rename) on
	// every node at once. They may drop each other's lines (the last rename
	// wins, as on PVE), never a line that was there before; readers see
	// whole files; writers serialised by pmxcfs's lock directory lose nothing.
	t.Run("concurrent_appends", func(t *testing.T) {
		before := onNode(t, lab, "pve01", "cat /etc/pve/priv/authorized_keys")
		if !strings.Contains(before, "gopve-lab") {
			t.Fatalf("the lab key is not in the cluster's authorized_keys:\n%s", before)
		}
		const rename = `f=/etc/pve/priv/authorized_keys; for i in $(seq 1 15); do t=$(mktemp /etc/pve/priv/.ansible_tmpXXXXXX) && cat $f > $t && echo "ssh-ed25519 AAAA$(hostname)$i racy" >> $t && mv $t $f || echo FAILED; done`
		const reader = `for i in $(seq 1 200); do grep -q gopve-lab /etc/pve/priv/authorized_keys || echo MISSING; done`
		const locked = `f=/etc/pve/priv/known_hosts; for i in $(seq 1 10); do until mkdir /etc/pve/priv/lock/kh 2>/dev/null; do sleep 0.01; done; t=$(mktemp /etc/pve/priv/.tmpXXXXXX); cat $f > $t; echo "locked-$(hostname)-$i" >> $t; mv $t $f; rmdir /etc/pve/priv/lock/kh; done`
		var wg sync.WaitGroup
		outs := make([]Result, 0, 9)
		var mu sync.Mutex
		for _, n := range nodes {
			for _, cmd := range []string{rename, reader, locked} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := run(t, lab, n.Name, cmd)
					mu.Lock()
					outs = append(outs, r)
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		for _, r := range outs {
			if strings.Contains(r.Stdout, "MISSING") || strings.Contains(r.Stdout, "FAILED") || r.ExitCode != 0 {
				t.Errorf("a writer failed or a reader saw a partial file: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
			}
		}
		for _, n := range nodes {
			after := onNode(t, lab, n.Name, "cat /etc/pve/priv/authorized_keys")
			for _, line := range strings.Split(strings.TrimSpace(before), "\n") {
				if !strings.Contains(after, line+"\n") {
					t.Errorf("%s: line %q, present before the appends, is gone", n.Name, line)
				}
			}
			kh := onNode(t, lab, n.Name, "cat /etc/pve/priv/known_hosts")
			for _, m := range nodes {
				for i := 1; i <= 10; i++ {
					if !strings.Contains(kh, fmt.Sprintf("locked-%s-%d\n", m.Name, i)) {
						t.Errorf("%s: locked append locked-%s-%d lost", n.Name, m.Name, i)
					}
				}
			}
		}
	})

	// The same with Ansible's own modules on every node at once (forks=3):
	// lineinfile and blockinfile go through atomic_move (temp file,
	// chmod/chown/copystat, rename), which pmxcfs accepts.
	t.Run("ansible", func(t *testing.T) {
		before := onNode(t, lab, "pve01", "cat /etc/pve/priv/authorized_keys")
		for i := 0; i < 2; i++ {
			out, err := ansible(t, lab, "ansible", "all", "-f", "3", "-m", "lineinfile", "-a",
				fmt.Sprintf("path=/etc/pve/priv/authorized_keys line='ssh-ed25519 AAAAansible{{ inventory_hostname }}%d ansible'", i))
			if err != nil {
				t.Fatalf("lineinfile on every node: %v\n%s", err, out)
			}
		}
		out, err := ansible(t, lab, "ansible", "all", "-f", "3", "-m", "blockinfile", "-a",
			"path=/root/.ssh/authorized_keys marker='# {mark} {{ inventory_hostname }}' block='ssh-ed25519 AAAAblock{{ inventory_hostname }} block'")
		if err != nil {
			t.Fatalf("blockinfile through the /root/.ssh symlink on every node: %v\n%s", err, out)
		}
		after := onNode(t, lab, "pve02", "cat /etc/pve/priv/authorized_keys")
		for _, line := range strings.Split(strings.TrimSpace(before), "\n") {
			if !strings.Contains(after, line+"\n") {
				t.Errorf("line %q, present before the Ansible runs, is gone:\n%s", line, after)
			}
		}
		for _, n := range nodes {
			// Ansible writes through the link (follow), as it would on PVE.
			if out := onNode(t, lab, n.Name, "readlink /root/.ssh/authorized_keys; grep -c 'AAAAblock' /etc/pve/priv/authorized_keys"); !strings.HasPrefix(out, "/etc/pve/priv/authorized_keys\n") {
				t.Errorf("%s: /root/.ssh/authorized_keys is no longer the link into /etc/pve: %q", n.Name, out)
			}
		}
		if out := onNode(t, lab, "pve03", "stat -c '%U:%G %a' /etc/pve/priv/authorized_keys"); out != "root:www-data 600\n" {
			t.Errorf("authorized_keys after atomic_move: %q", out)
		}
	})

	// C10: without quorum, every write to /etc/pve is "Permission denied".
	t.Run("no_quorum_read_only", func(t *testing.T) {
		for _, n := range []string{"pve02", "pve03"} {
			if err := lab.Sim().SetOnline(n, false); err != nil {
				t.Fatal(err)
			}
		}
		r := run(t, lab, "pve01", "echo x >> /etc/pve/datacenter.cfg; cat /etc/pve/datacenter.cfg >/dev/null && echo READ-OK")
		if !strings.Contains(r.Stderr, "Permission denied") || !strings.Contains(r.Stdout, "READ-OK") {
			t.Errorf("write without quorum: %+v", r)
		}
		for _, n := range []string{"pve02", "pve03"} {
			if err := lab.Sim().SetOnline(n, true); err != nil {
				t.Fatal(err)
			}
		}
		if r := run(t, lab, "pve01", "echo '#ok' >> /etc/pve/datacenter.cfg"); r.ExitCode != 0 {
			t.Errorf("write with quorum back: %+v", r)
		}
	})
}
