// The node views: /version, /nodes, a node's status and /cluster/resources.
package clustersim

import (
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/cluster"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

func (s *backend) getVersion(rc *core.Req) (any, error) {
	v := s.NodeVersionLocked(rc.Node)
	release := v.Version
	if i := strings.LastIndex(release, "."); i > 0 {
		release = release[:i]
	}
	return map[string]any{"version": v.Version, "release": release, "repoid": v.RepoID, "console": "html5"}, nil
}

// nodeEntryLocked is name's entry of /nodes and /cluster/resources for
// rc's caller (cluster.NodeEntry), with the simulator's fixed figures;
// shown says they are in.
func (s *backend) nodeEntryLocked(rc *core.Req, name string) (map[string]any, bool) {
	return cluster.NodeEntry(name, s.NodeUpLocked(name), func() (cluster.Stats, bool) {
		// Without Sys.Audit the node is listed, without its stats (K19).
		if !core.HasPriv(rc.DB(), rc.Who, "/nodes/"+name, []string{"Sys.Audit"}, false) {
			return cluster.Stats{}, false
		}
		return cluster.Stats{
			CPU: 0.02, MaxCPU: 4, Mem: core.SimMem, MaxMem: core.SimMaxMem, Disk: core.SimDisk, MaxDisk: core.SimMaxDisk,
			Uptime: time.Now().Unix() - s.State.Nodes[name].BootTime,
		}, true
	})
}

func (s *backend) getNodes(rc *core.Req) (any, error) {
	out := []map[string]any{}
	for _, name := range s.MembersLocked(rc.Node) {
		e, _ := s.nodeEntryLocked(rc, name)
		if fp, ok := s.FingerprintLocked(name); ok { // not for a nodelist entry added by hand
			e["ssl_fingerprint"] = fp
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *backend) getNodeStatus(rc *core.Req) (any, error) {
	n := s.State.Nodes[rc.Node]
	v := s.NodeVersionLocked(rc.Node)
	kernel := v.Kernel
	return map[string]any{
		"boot-info":      map[string]any{"mode": "efi", "secureboot": 0},
		"cpu":            0.02,
		"cpuinfo":        map[string]any{"cores": 4, "cpus": 4, "model": "QEMU Virtual CPU", "sockets": 1, "mhz": "2400.000", "hvm": "1", "flags": "", "user_hz": 100},
		"current-kernel": map[string]any{"machine": "x86_64", "release": kernel, "sysname": "Linux", "version": "#1 SMP PREEMPT_DYNAMIC PMX"},
		"kversion":       "Linux " + kernel,
		"loadavg":        []string{"0.10", "0.05", "0.01"},
		"memory":         map[string]any{"available": core.SimMaxMem - core.SimMem, "free": core.SimMaxMem - core.SimMem, "total": core.SimMaxMem, "used": core.SimMem},
		"swap":           map[string]any{"free": 0, "total": 0, "used": 0},
		"pveversion":     "pve-manager/" + v.Version + "/" + v.RepoID,
		"rootfs":         map[string]any{"avail": core.SimMaxDisk - core.SimDisk, "free": core.SimMaxDisk - core.SimDisk, "total": core.SimMaxDisk, "used": core.SimDisk},
		"uptime":         time.Now().Unix() - n.BootTime,
		"idle":           0,
		"wait":           0,
		"ksm":            map[string]any{"shared": 0},
	}, nil
}

func (s *backend) getClusterResources(rc *core.Req) (any, error) {
	db := rc.DB()
	typ := rc.Str("type")
	out := []map[string]any{}
	members := s.MembersLocked(rc.Node)
	if typ == "" || typ == "node" {
		for _, name := range members {
			e, shown := s.nodeEntryLocked(rc, name)
			if shown {
				e["cgroup-mode"] = 2
			}
			out = append(out, e)
		}
	}
	if typ == "" || typ == "vm" {
		out = append(out, s.VMResourcesLocked(rc)...)
	}
	if typ == "" || typ == "storage" {
		for _, id := range db.SortedStorageIDs() {
			if !core.HasPriv(db, rc.Who, "/storage/"+id, []string{"Datastore.Audit", "Datastore.AllocateSpace"}, true) {
				continue
			}
			st := db.Storage[id]
			for _, name := range members {
				if !st.OnNode(name) {
					continue
				}
				e := map[string]any{
					"id": "storage/" + name + "/" + id, "type": "storage", "node": name, "storage": id,
					"plugintype": st.Type, "content": st.Content(), "shared": pvecommon.BoolNum(st.Shared()),
				}
				if s.NodeUpLocked(name) && s.ActiveOn(name, st) == nil {
					e["status"] = "available"
					u := s.StorageUsageLocked(name, st)
					e["disk"], e["maxdisk"] = u.Used, u.Total
				} else {
					e["status"] = "unknown"
				}
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// nodeRoutes are the node and version endpoints, and /cluster/resources.
func (s *backend) nodeRoutes() map[string]core.Handler {
	return map[string]core.Handler{
		"GET /version":             s.getVersion,
		"GET /nodes":               s.getNodes,
		"GET /nodes/{node}/status": s.getNodeStatus,
		"GET /cluster/resources":   s.getClusterResources,
	}
}
