package pvesim

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// agree checks that node's /etc/pve files and its API say the same thing:
// storage.cfg parses to what GET /storage lists, corosync.conf is the
// cluster's (absent on a standalone node).
func agree(t *testing.T, s *Sim, c *apiClient, node, after string) {
	t.Helper()
	dir := s.EtcPveDir(node)
	b, err := os.ReadFile(filepath.Join(dir, "storage.cfg"))
	if err != nil {
		t.Fatalf("after %s: %s has no storage.cfg: %v", after, node, err)
	}
	fromFile := map[string]map[string]string{}
	s.Mu.Lock()
	parsed, _ := s.ParseStorageCfg(string(b))
	for id, st := range parsed {
		m := map[string]string{"type": st.Type}
		for k, v := range st.Options {
			m[k] = pvecommon.ParamString(v)
		}
		fromFile[id] = m
	}
	s.Mu.Unlock()
	fromAPI := map[string]map[string]string{}
	for _, e := range c.Call("GET", "/storage", nil).Must(t, "GET /storage").List() {
		m := map[string]string{}
		for k, v := range e {
			if k != "digest" && k != "storage" {
				m[k] = pvecommon.ParamString(v)
			}
		}
		fromAPI[fmt.Sprint(e["storage"])] = m
	}
	if !reflect.DeepEqual(fromFile, fromAPI) {
		t.Errorf("after %s on %s: storage.cfg says\n%v\nthe API says\n%v", after, node, fromFile, fromAPI)
	}
	conf, confErr := os.ReadFile(filepath.Join(dir, "corosync.conf"))
	info, clustered := s.Cluster(node)
	switch {
	case clustered && (confErr != nil || string(conf) != info.CorosyncConf):
		t.Errorf("after %s on %s: corosync.conf %q (%v), want the cluster's\n%s", after, node, conf, confErr, info.CorosyncConf)
	case !clustered && confErr == nil:
		t.Errorf("after %s on %s: a standalone node has corosync.conf", after, node)
	}
}

// /etc/pve is one state: the API writes the files as PVE lays them out, a
// file edited by hand is what the API shows next, a join gives the joiner
// the cluster's directory (Z7: its own storage.cfg is gone), and the API and
// the files agree after every storage and cluster call.
func TestEtcPveFilesAreTheState(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{Nodes: 3, TaskDuration: 400 * time.Millisecond, RestartWindow: 300 * time.Millisecond})
	c := map[string]*apiClient{}
	for _, n := range []string{"pve01", "pve02", "pve03"} {
		c[n] = newClient(t, s, n).Root()
		agree(t, s, c[n], n, "start")
	}
	own3 := s.EtcPveDir("pve03")
	if s.EtcPveDir("pve01") == own3 {
		t.Fatal("standalone nodes share one /etc/pve")
	}
	for _, rel := range []string{"storage.cfg", "user.cfg", "datacenter.cfg", "priv/authkey.key", "priv/token.cfg",
		"pve-root-ca.pem", "priv/pve-root-ca.key", "nodes/pve03/pve-ssl.pem", "nodes/pve03/pve-ssl.key", "nodes/pve03/qemu-server", "nodes/pve03/lxc"} {
		if _, err := os.Stat(filepath.Join(own3, rel)); err != nil {
			t.Errorf("fresh /etc/pve of pve03 lacks %s: %v", rel, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(own3, "storage.cfg")); !strings.HasPrefix(string(b),
		"dir: local\n\tpath /var/lib/vz\n\tcontent ") || !strings.Contains(string(b), "\n\nlvmthin: local-lvm\n\tthinpool data\n\tvgname pve\n\tcontent rootdir,images\n\n") {
		t.Errorf("fresh storage.cfg is not the installer's:\n%s", b)
	}

	c["pve03"].Call("POST", "/storage", url.Values{"storage": {"only-on-3"}, "type": {"dir"}, "path": {"/srv/x"}, "content": {"iso"}}).Must(t, "storage on pve03")
	agree(t, s, c["pve03"], "pve03", "POST /storage")
	c["pve03"].Call("PUT", "/storage/only-on-3", url.Values{"disable": {"1"}, "content": {"iso,backup"}}).Must(t, "PUT")
	agree(t, s, c["pve03"], "pve03", "PUT /storage")
	if b, _ := os.ReadFile(filepath.Join(own3, "storage.cfg")); !strings.Contains(string(b), "dir: only-on-3\n\tdisable\n\tpath /srv/x\n\tcontent backup,iso\n") {
		t.Errorf("storage.cfg section not as SectionConfig writes it:\n%s", b)
	}

	// A hand edit (as a role's lineinfile/blockinfile would make it).
	p1 := filepath.Join(s.EtcPveDir("pve01"), "storage.cfg")
	old, _ := os.ReadFile(p1)
	if err := os.WriteFile(p1, append(old, []byte("dir: byhand\n\tpath /srv/hand\n\tcontent snippets\n\tshared 1\n\n")...), 0o640); err != nil {
		t.Fatal(err)
	}
	got := c["pve01"].Call("GET", "/storage/byhand", nil).Must(t, "hand-made storage").Obj()
	if got["path"] != "/srv/hand" || fmt.Sprint(got["shared"]) != "1" || got["content"] != "snippets" {
		t.Errorf("hand-made storage through the API: %v", got)
	}
	agree(t, s, c["pve01"], "pve01", "hand edit")
	c["pve01"].Call("POST", "/storage", url.Values{"storage": {"aaa"}, "type": {"dir"}, "path": {"/srv/aaa"}}).Must(t, "aaa")
	if b, _ := os.ReadFile(p1); !strings.Contains(string(b), "dir: byhand\n") || strings.Index(string(b), "dir: aaa") < strings.Index(string(b), "dir: byhand") {
		t.Errorf("storage.cfg order is not the file's with new sections appended:\n%s", b)
	}

	c["pve01"].Call("POST", "/pools", url.Values{"poolid": {"web"}, "comment": {"front"}}).Must(t, "pool")
	c["pve01"].Call("PUT", "/pools/web", url.Values{"storage": {"byhand"}}).Must(t, "pool member")
	if b, _ := os.ReadFile(filepath.Join(s.EtcPveDir("pve01"), "user.cfg")); !strings.Contains(string(b), "\npool:web:front::byhand:\n") {
		t.Errorf("user.cfg lacks the pool line:\n%s", b)
	}

	upid := createCluster(t, c["pve01"], "lab")
	agree(t, s, c["pve01"], "pve01", "cluster create")
	waitTask(t, c["pve01"], upid)
	eventually(t, "quorum", func() bool { return quorate(c["pve01"], 1) })
	for _, j := range []string{"pve02", "pve03"} {
		n1, _ := s.Node("pve01")
		up := c[j].Call("POST", "/cluster/config/join", joinParams(s, "pve01", n1.Fingerprint)).Must(t, "join "+j).Data.(string)
		eventually(t, j+" joined", func() bool {
			info, ok := s.Cluster(j)
			return ok && len(info.Nodes) >= 2 && info.Quorate
		})
		var cj *apiClient
		eventually(t, j+" API back with its new certificate", func() bool {
			cj = newClient(t, s, j) // pins the current fingerprint (C5)
			return cj.Call("GET", "/version", nil).Status == 401
		})
		c[j] = cj.Root()
		if st := waitTask(t, c[j], up); st["exitstatus"] != "OK" {
			t.Fatalf("join %s: %v", j, st)
		}
		agree(t, s, c[j], j, "join")
		agree(t, s, c["pve01"], "pve01", "join of "+j)
	}
	shared := s.EtcPveDir("pve01")
	if s.EtcPveDir("pve02") != shared || s.EtcPveDir("pve03") != shared {
		t.Fatalf("members do not share /etc/pve: %s %s %s", shared, s.EtcPveDir("pve02"), s.EtcPveDir("pve03"))
	}
	if _, err := os.Stat(own3); !os.IsNotExist(err) {
		t.Errorf("pve03's own /etc/pve survived the join: %v", err)
	}
	if r := c["pve03"].Call("GET", "/storage/only-on-3", nil); r.Status != 500 {
		t.Errorf("Z7: the joiner's storage survived the join: %d", r.Status)
	}
	for _, n := range []string{"pve01", "pve02", "pve03"} {
		if _, err := os.Stat(filepath.Join(shared, "nodes", n, "pve-ssl.pem")); err != nil {
			t.Errorf("cluster /etc/pve lacks nodes/%s/pve-ssl.pem: %v", n, err)
		}
	}
	m := string(s.GeneratedPmxcfsFile("pve02", ".members"))
	if !strings.Contains(m, `"nodename": "pve02"`) || !strings.Contains(m, `"nodes": 3, "quorate": 1`) || !strings.Contains(m, `"pve03": { "id": 3, "online": 1`) {
		t.Errorf(".members on pve02:\n%s", m)
	}

	// corosync.conf edited in /etc/pve is reloaded when its config_version
	// is not lower than the running one (dcdb_sync_corosync_conf).
	cc := filepath.Join(shared, "corosync.conf")
	info, _ := s.Cluster("pve01")
	conf := info.CorosyncConf
	older := strings.Replace(strings.Replace(conf, "quorum_votes: 1\n    ring0_addr: 127", "quorum_votes: 7\n    ring0_addr: 127", 1),
		fmt.Sprintf("config_version: %d", info.ConfigVersion), "config_version: 1", 1)
	if err := os.WriteFile(cc, []byte(older), 0o640); err != nil {
		t.Fatal(err)
	}
	s.PmxcfsChanged("pve01", "corosync.conf")
	if got, _ := s.Cluster("pve02"); got.ExpectedVotes != 3 {
		t.Errorf("an older corosync.conf was applied: expected votes %d", got.ExpectedVotes)
	}
	newer := strings.Replace(strings.Replace(conf, "quorum_votes: 1\n    ring0_addr: 127", "quorum_votes: 3\n    ring0_addr: 127", 1),
		fmt.Sprintf("config_version: %d", info.ConfigVersion), fmt.Sprintf("config_version: %d", info.ConfigVersion+1), 1)
	if err := os.WriteFile(cc, []byte(newer), 0o640); err != nil {
		t.Fatal(err)
	}
	s.PmxcfsChanged("pve03", "corosync.conf")
	if got, _ := s.Cluster("pve02"); got.ExpectedVotes != 5 || got.ConfigVersion != info.ConfigVersion+1 || !got.Quorate {
		t.Errorf("hand-edited corosync.conf (pve01 has 3 votes) not reloaded: %+v", got)
	}
	agree(t, s, c["pve02"], "pve02", "corosync.conf edit")
	// A nodelist entry for a machine the lab does not have: one more
	// expected vote, never online; every view copes with it.
	ghost := strings.Replace(newer, "nodelist {\n", "nodelist {\n  node {\n    name: ghost\n    nodeid: 9\n    quorum_votes: 1\n    ring0_addr: 10.9.9.9\n  }\n", 1)
	ghost = strings.Replace(ghost, fmt.Sprintf("config_version: %d", info.ConfigVersion+1), fmt.Sprintf("config_version: %d", info.ConfigVersion+2), 1)
	if err := os.WriteFile(cc, []byte(ghost), 0o640); err != nil {
		t.Fatal(err)
	}
	s.PmxcfsChanged("pve01", "corosync.conf")
	if got, _ := s.Cluster("pve01"); got.ExpectedVotes != 6 || len(got.Nodes) != 4 {
		t.Errorf("ghost node not in the cluster: %+v", got)
	}
	for _, p := range []string{"/cluster/status", "/nodes", "/cluster/resources", "/cluster/config/nodes"} {
		c["pve01"].Call("GET", p, nil).Must(t, p+" with a ghost member")
	}
	// Join info reads every member's certificate from /etc/pve, as PVE does.
	if r := c["pve01"].Call("GET", "/cluster/config/join", nil); r.Status != 500 ||
		r.Reason != "can't open '/etc/pve/nodes/ghost/pve-ssl.pem' - No such file or directory" {
		t.Errorf("join info with a member without certificate: %d %q", r.Status, r.Reason)
	}
	_ = s.GeneratedPmxcfsFile("pve01", ".members")

	// .vmlist is the guest configurations really in /etc/pve.
	if got := string(s.GeneratedPmxcfsFile("pve03", ".vmlist")); !strings.Contains(got, "\"version\"") || strings.Contains(got, "ids") {
		t.Errorf(".vmlist without guests: %q", got)
	}
	if err := os.WriteFile(filepath.Join(shared, "nodes/pve02/lxc/105.conf"), []byte("arch: amd64\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if got := string(s.GeneratedPmxcfsFile("pve03", ".vmlist")); !strings.Contains(got, `"105": { "node": "pve02", "type": "lxc", "version": `) {
		t.Errorf(".vmlist with CT 105 on pve02: %q", got)
	}

	// A storage added on one member is in every member's storage.cfg.
	c["pve02"].Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}}).Must(t, "zfspool")
	for _, n := range []string{"pve01", "pve02", "pve03"} {
		agree(t, s, c[n], n, "POST /storage on pve02")
	}
	c["pve03"].Call("DELETE", "/storage/tank", nil).Must(t, "delete")
	agree(t, s, c["pve01"], "pve01", "DELETE /storage")

	// Removing the pool line by hand removes the pool.
	uc := filepath.Join(shared, "user.cfg")
	b, _ := os.ReadFile(uc)
	if err := os.WriteFile(uc, []byte(strings.Replace(string(b), "pool:web:front::byhand:\n", "", 1)), 0o640); err != nil {
		t.Fatal(err)
	}
	s.PmxcfsChanged("pve02", "user.cfg")
	if r := c["pve03"].Call("GET", "/pools", url.Values{"poolid": {"web"}}); r.Status != 500 {
		t.Errorf("pool removed from user.cfg by hand still served: %d %v", r.Status, r.Data)
	}
}
