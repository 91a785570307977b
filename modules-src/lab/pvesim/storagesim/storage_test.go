package storagesim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// S1/S2: storage CRUD with per-type options, fixed keys, delete and digest.
func TestStorageCRUDS1S2(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		s := simtest.Start(t, pvesim.New, simtest.Opts{Version: v})
		c := simtest.NewClient(t, s, "pve01").LabToken()
		tests := []struct {
			name   string
			method string
			path   string
			params url.Values
			status int
			reason string // exact reason phrase when set
		}{
			{"zfspool per S2", "POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank/vm"},
				"content": {"rootdir,images"}, "sparse": {"1"}, "nodes": {"pve01"}}, 200, ""},
			{"duplicate", "POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}}, 500,
				"create storage failed: storage ID 'tank' already defined"},
			{"option of another type", "POST", "/storage", url.Values{"storage": {"z2"}, "type": {"zfspool"}, "pool": {"x"}, "path": {"/x"}}, 500,
				"unexpected property 'path'"},
			{"missing required", "POST", "/storage", url.Values{"storage": {"z3"}, "type": {"zfspool"}}, 500,
				"missing value for required option 'pool'"},
			{"content not supported by type", "POST", "/storage", url.Values{"storage": {"z4"}, "type": {"zfspool"}, "pool": {"p"}, "content": {"iso"}}, 500,
				"storage does not support content type 'iso'"},
			{"unknown to the schema", "POST", "/storage", url.Values{"storage": {"z5"}, "type": {"zfspool"}, "pool": {"p"}, "colour": {"red"}}, 400, ""},
			{"nfs", "POST", "/storage", url.Values{"storage": {"nas"}, "type": {"nfs"}, "server": {"10.0.0.5"}, "export": {"/export"},
				"path": {"/mnt/pve/nas"}, "content": {"backup,iso"}}, 200, ""},
			{"lvmthin", "POST", "/storage", url.Values{"storage": {"thin"}, "type": {"lvmthin"}, "vgname": {"vg"}, "thinpool": {"data"}}, 200, ""},
			{"fixed key, same value", "PUT", "/storage/tank", url.Values{"pool": {"tank/vm"}}, 500,
				"update storage failed: can't change value of fixed parameter 'pool'"},
			{"fixed nfs server", "PUT", "/storage/nas", url.Values{"server": {"10.0.0.6"}}, 500,
				"update storage failed: can't change value of fixed parameter 'server'"},
			{"update non-fixed", "PUT", "/storage/tank", url.Values{"sparse": {"0"}, "content": {"images"}}, 200, ""},
			{"digest mismatch", "PUT", "/storage/tank", url.Values{"digest": {"0000000000000000000000000000000000000000"}, "disable": {"1"}}, 500,
				"update storage failed: detected modified configuration - file changed by other user? Try again."},
			{"delete option", "PUT", "/storage/tank", url.Values{"delete": {"nodes"}}, 200, ""},
			{"delete required", "PUT", "/storage/tank", url.Values{"delete": {"pool"}}, 500, ""},
			{"S4 snippets on local", "PUT", "/storage/local", url.Values{"content": {"iso,vztmpl,backup,import,snippets"}}, 200, ""},
			{"update missing", "PUT", "/storage/nope", url.Values{"disable": {"1"}}, 500, "update storage failed: storage 'nope' does not exist"},
			{"delete", "DELETE", "/storage/thin", nil, 200, ""},
			{"delete missing", "DELETE", "/storage/thin", nil, 500, "delete storage failed: storage 'thin' does not exist"},
		}
		for _, tt := range tests {
			r := c.Call(tt.method, tt.path, tt.params)
			if r.Err != nil || r.Status != tt.status || tt.reason != "" && r.Reason != tt.reason {
				t.Errorf("PVE %d %s: %d %q (err %v), want %d %q", v, tt.name, r.Status, r.Reason, r.Err, tt.status, tt.reason)
			}
			if tt.method == "POST" && tt.status == 200 {
				d := r.Obj()
				if d["storage"] != tt.params.Get("storage") || d["type"] != tt.params.Get("type") {
					t.Errorf("create returned %v, want {storage,type}", r.Data)
				}
			}
		}
		got := c.Call("GET", "/storage/tank", nil).Must(t, "get tank").Obj()
		// SectionConfig numbers, content re-encoded, deleted key gone, digest present.
		if got["sparse"] != float64(0) || got["content"] != "images" || got["pool"] != "tank/vm" || got["digest"] == nil {
			t.Errorf("PVE %d tank = %v", v, got)
		}
		if _, has := got["nodes"]; has {
			t.Errorf("deleted option still present: %v", got)
		}
		// A digest read now is accepted for the next update.
		c.Call("PUT", "/storage/tank", url.Values{"digest": {got["digest"].(string)}, "blocksize": {"16k"}}).Must(t, "update with digest")
		local := c.Call("GET", "/storage/local", nil).Must(t, "local").Obj()
		if !strings.Contains(local["content"].(string), "snippets") {
			t.Errorf("S4: local content %v", local["content"])
		}
		// maxfiles exists for dir in PVE 8 only.
		r := c.Call("POST", "/storage", url.Values{"storage": {"old"}, "type": {"dir"}, "path": {"/srv/old"}, "maxfiles": {"2"}})
		if v == 8 && r.Status != 200 || v == 9 && r.Status == 200 {
			t.Errorf("PVE %d dir maxfiles: %d %q", v, r.Status, r.Reason)
		}
		list := c.Call("GET", "/storage", url.Values{"type": {"zfspool"}}).Must(t, "list by type").List()
		if len(list) != 1 || list[0]["storage"] != "tank" {
			t.Errorf("type filter: %v", list)
		}
		ns := c.Call("GET", "/nodes/pve01/storage", nil).Must(t, "node storage").List()
		if len(ns) < 3 {
			t.Errorf("node storage %v", ns)
		}
		st := c.Call("GET", "/nodes/pve01/storage/nas/status", nil).Must(t, "storage status").Obj()
		if st["type"] != "nfs" || st["shared"] != float64(1) {
			t.Errorf("nfs status %v", st)
		}
		if r := c.Call("GET", "/nodes/pve01/storage/nope/status", nil); r.Status != 400 {
			t.Errorf("missing storage status: %d", r.Status)
		}
		if r := c.Call("DELETE", "/storage/tank", nil).Must(t, "delete tank"); r.Data != nil {
			t.Errorf("delete returned %v, want null", r.Data)
		}
	}
}

func TestPools(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{Version: 8})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	c.Call("POST", "/pools", url.Values{"poolid": {"tenant-a"}, "comment": {"A"}}).Must(t, "create")
	if r := c.Call("POST", "/pools", url.Values{"poolid": {"tenant-a"}}); r.Status != 500 || r.Reason != "create pool failed: pool 'tenant-a' already exists" {
		t.Errorf("duplicate: %d %q", r.Status, r.Reason)
	}
	c.Call("PUT", "/pools", url.Values{"poolid": {"tenant-a"}, "comment": {"B"}, "storage": {"local"}}).Must(t, "update")
	one := c.Call("GET", "/pools", url.Values{"poolid": {"tenant-a"}}).Must(t, "get one").List()
	if len(one) != 1 || one[0]["comment"] != "B" || len(one[0]["members"].([]any)) != 1 {
		t.Errorf("pool %v", one)
	}
	dep := c.Call("GET", "/pools/tenant-a", nil).Must(t, "deprecated get").Obj()
	if dep["comment"] != "B" {
		t.Errorf("deprecated form %v", dep)
	}
	if r := c.Call("DELETE", "/pools", url.Values{"poolid": {"tenant-a"}}); r.Status != 500 ||
		r.Reason != "delete pool failed: pool 'tenant-a' is not empty (contains storage 'local')" {
		t.Errorf("delete non-empty: %d %q", r.Status, r.Reason)
	}
	// Api2/Pool.pm: a member twice is refused, and the whole update with it.
	if r := c.Call("PUT", "/pools", url.Values{"poolid": {"tenant-a"}, "storage": {"local-lvm,local"}}); r.Status != 500 ||
		r.Reason != "update pools failed: Storage 'local' is already a pool member" {
		t.Errorf("member twice: %d %q", r.Status, r.Reason)
	}
	if m := c.Call("GET", "/pools", url.Values{"poolid": {"tenant-a"}}).Must(t, "get").List()[0]["members"].([]any); len(m) != 1 {
		t.Errorf("a refused update changed the members: %v", m)
	}
	if r := c.Call("PUT", "/pools", url.Values{"poolid": {"tenant-a"}, "storage": {"local-lvm"}, "delete": {"1"}}); r.Status != 500 ||
		r.Reason != "update pools failed: Storage 'local-lvm' is not a pool member" {
		t.Errorf("removing a non-member: %d %q", r.Status, r.Reason)
	}
	c.Call("PUT", "/pools", url.Values{"poolid": {"tenant-a"}, "storage": {"local"}, "delete": {"1"}}).Must(t, "remove member")
	// Deleting a storage removes it from its pools (remove_storage_access).
	c.Call("POST", "/storage", url.Values{"storage": {"scratch"}, "type": {"dir"}, "path": {"/srv/scratch"}}).Must(t, "scratch")
	c.Call("PUT", "/pools", url.Values{"poolid": {"tenant-a"}, "storage": {"scratch"}}).Must(t, "scratch into pool")
	c.Call("DELETE", "/storage/scratch", nil).Must(t, "delete scratch")
	c.Call("DELETE", "/pools", url.Values{"poolid": {"tenant-a"}}).Must(t, "delete")
	if r := c.Call("GET", "/pools", url.Values{"poolid": {"tenant-a"}}); r.Status != 500 {
		t.Errorf("deleted pool still readable: %d", r.Status)
	}
}

// Z7: a zfspool storage whose pool is missing on a node — create fails on
// the local node (activation), other nodes show it inactive.
func TestStorageActivationHookZ7(t *testing.T) {
	t.Parallel()
	pools := map[string]bool{"pve01": true} // only pve01 has tank
	s := simtest.StartWith(t, pvesim.New, simtest.Opts{Nodes: 2}, func(c *pvesim.Config) {
		c.StorageCheck = func(node string, st pvesim.StorageInfo) error {
			if st.Type == "zfspool" && !pools[node] {
				return fmt.Errorf("zfs error: cannot open '%s': no such pool", st.Options["pool"])
			}
			return nil
		}
	})
	if _, err := s.CreateCluster("pve01", "lab", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddNode("pve01", "pve02", "", false); err != nil {
		t.Fatal(err)
	}
	c2 := simtest.NewClient(t, s, "pve02").LabToken()
	r := c2.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}})
	if r.Status != 500 || r.Reason != "create storage failed: zfs error: cannot open 'tank': no such pool" {
		t.Fatalf("create on a node without the pool: %d %q", r.Status, r.Reason)
	}
	if got := c2.Call("GET", "/storage", nil).Must(t, "list").List(); len(got) != 2 {
		t.Errorf("failed create left the storage behind: %v", got)
	}
	c1 := simtest.NewClient(t, s, "pve01").LabToken()
	c1.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}}).Must(t, "create on pve01")
	st := c2.Call("GET", "/nodes/pve02/storage/tank/status", nil).Must(t, "status on pve02").Obj()
	if st["active"] != float64(0) {
		t.Errorf("pve02 without the pool shows %v", st)
	}
	st = c1.Call("GET", "/nodes/pve01/storage/tank/status", nil).Must(t, "status on pve01").Obj()
	if st["active"] != float64(1) {
		t.Errorf("pve01 with the pool shows %v", st)
	}
}

// Storage as PVE does it, through the lab's hooks: activation on create
// (and its error, wrapped), a dir path PVE refuses, content listed from the
// node, sizes from the node, and the version the node's packages report.
func TestStoragePluginHooks(t *testing.T) {
	t.Parallel()
	var activated []string
	s := simtest.StartWith(t, pvesim.New, simtest.Opts{}, func(c *pvesim.Config) {
		c.StorageActivate = func(node string, st pvesim.StorageInfo) error {
			activated = append(activated, st.ID)
			if st.Options["path"] == "/missing" {
				return fmt.Errorf("unable to activate storage '%s' - directory '/missing' does not exist or is unreachable", st.ID)
			}
			return nil
		}
		c.StorageUsage = func(node string, st pvesim.StorageInfo) (pvesim.StorageUsage, error) {
			return pvesim.StorageUsage{Total: 1000, Used: 250, Avail: 750}, nil
		}
		c.StorageContent = func(node string, st pvesim.StorageInfo) ([]pvesim.Volume, error) {
			return []pvesim.Volume{{VolID: st.ID + ":snippets/user.yaml", Content: "snippets", Format: "snippet", Size: 12, CTime: 1700000000},
				{VolID: st.ID + ":iso/debian.iso", Content: "iso", Format: "iso", Size: 4096, CTime: 1700000000}}, nil
		}
		c.NodeVersion = func(node string) (pvesim.NodeVersion, error) {
			return pvesim.NodeVersion{Version: "9.2.5", RepoID: "0123456789abcdef", Kernel: "6.14.11-1-pve"}, nil
		}
	})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	r := c.Call("POST", "/storage", url.Values{"storage": {"gone"}, "type": {"dir"}, "path": {"/missing"}, "create-base-path": {"0"}})
	if r.Status != 500 || r.Reason != "create storage failed: unable to activate storage 'gone' - directory '/missing' does not exist or is unreachable" {
		t.Errorf("activation failure: %d %q", r.Status, r.Reason)
	}
	if r := c.Call("POST", "/storage", url.Values{"storage": {"bad"}, "type": {"dir"}, "path": {"/srv/a b"}}); r.Status != 500 ||
		r.Reason != "illegal path for directory storage: /srv/a b" {
		t.Errorf("illegal path: %d %q", r.Status, r.Reason)
	}
	c.Call("POST", "/storage", url.Values{"storage": {"dd"}, "type": {"dir"}, "path": {"/srv/dd/"}, "content": {"snippets"}}).Must(t, "create dd")
	if got := c.Call("GET", "/storage/dd", nil).Must(t, "get dd").Obj()["path"]; got != "/srv/dd" {
		t.Errorf("path not canonicalised: %v", got)
	}
	content := c.Call("GET", "/nodes/pve01/storage/dd/content", nil).Must(t, "content").List()
	if len(content) != 1 || content[0]["volid"] != "dd:snippets/user.yaml" || content[0]["format"] != "snippet" {
		t.Errorf("content of a snippets-only storage: %v", content)
	}
	c.Call("PUT", "/storage/dd", url.Values{"content": {"snippets,iso"}}).Must(t, "add iso")
	if content := c.Call("GET", "/nodes/pve01/storage/dd/content", url.Values{"content": {"iso"}}).Must(t, "iso content").List(); len(content) != 1 ||
		content[0]["volid"] != "dd:iso/debian.iso" {
		t.Errorf("iso content after pvesm set: %v", content)
	}
	st := c.Call("GET", "/nodes/pve01/storage/dd/status", nil).Must(t, "status").Obj()
	if st["total"] != float64(1000) || st["used"] != float64(250) || st["avail"] != float64(750) {
		t.Errorf("status sizes not the node's: %v", st)
	}
	if strings.Join(activated, ",") != "gone,dd,dd,dd,dd" {
		t.Errorf("activations: %v, want create (failed), create, two listings, one status (storage_info activates)", activated)
	}
	v := c.Call("GET", "/version", nil).Must(t, "version").Obj()
	if v["version"] != "9.2.5" || v["release"] != "9.2" || v["repoid"] != "0123456789abcdef" {
		t.Errorf("/version: %v", v)
	}
	ns := c.Call("GET", "/nodes/pve01/status", nil).Must(t, "node status").Obj()
	if ns["pveversion"] != "pve-manager/9.2.5/0123456789abcdef" || ns["kversion"] != "Linux 6.14.11-1-pve" {
		t.Errorf("node status: %v %v", ns["pveversion"], ns["kversion"])
	}
}
