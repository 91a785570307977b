package guests

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// GuestKind is what differs between a VM and a container on the paths they
// share (config read and write, typed config, power and destroy tasks under
// the config lock, pool membership, /cluster/resources entries): the rest
// of those paths is written once here, as pve-guest-common's
// AbstractConfig.pm is for qemu-server and pve-container.
type GuestKind struct {
	Dir  string // the config directory under nodes/<node>/ (vmEntry.Kind): "qemu-server", "lxc"
	Type string // the API's type, also the prefix of pool members and resource ids: "qemu", "lxc"
	// configMethod types config values: the schema method whose parameters
	// are the kind's config keys.
	configMethod, configPath string
	pendingHeader            string // guestconf.VMPending or CTPending
}

var (
	VMKind = GuestKind{Dir: "qemu-server", Type: "qemu", configMethod: "POST", configPath: "/nodes/{node}/qemu/{vmid}/config", pendingHeader: guestconf.VMPending}
	CTKind = GuestKind{Dir: "lxc", Type: "lxc", configMethod: "PUT", configPath: "/nodes/{node}/lxc/{vmid}/config", pendingHeader: guestconf.CTPending}
)

// Member is the guest's name in pools and /cluster/resources: "qemu/100".
func (k GuestKind) Member(vmid int) string { return fmt.Sprintf("%s/%d", k.Type, vmid) }

// haSID is the guest's HA service id: "vm:100", "ct:200".
func (k GuestKind) haSID(vmid int) string {
	if k.Dir == "lxc" {
		return fmt.Sprintf("ct:%d", vmid)
	}
	return fmt.Sprintf("vm:%d", vmid)
}

// KindOf is the kind of the guest e lists.
func KindOf(e core.VMEntry) GuestKind {
	if e.Kind == CTKind.Dir {
		return CTKind
	}
	return VMKind
}

// LoadGuestConfLocked reads a guest's config file from db.
func (s Model) LoadGuestConfLocked(db *core.ConfigDB, k GuestKind, node string, vmid int) (*guestconf.Conf, error) {
	rel := GuestConfPath(node, k.Dir, vmid)
	raw, ok := s.ReadEtcPve(db, rel)
	if !ok {
		// pve-guest-common AbstractConfig.pm load_config
		return nil, pvecommon.Die("Configuration file '%s' does not exist", rel)
	}
	return guestconf.Parse(raw), nil
}

func (s Model) writeGuestConfLocked(db *core.ConfigDB, k GuestKind, node string, vmid int, c *guestconf.Conf) {
	s.WriteEtcPve(db, GuestConfPath(node, k.Dir, vmid), c.Render(k.pendingHeader))
}

// TypedGuestConf renders config values with the schema's JSON types, as
// PVE's parse_*_config/check_type hand integers and booleans back as numbers.
func (s Model) TypedGuestConf(k GuestKind, keys map[string]string) map[string]any {
	m := s.Schema().Method(k.configMethod, k.configPath)
	out := make(map[string]any, len(keys))
	for key, v := range keys {
		out[key] = v
		if m == nil {
			continue
		}
		if p, ok := m.Parameters.PropFor(key); ok && (p.Type == "integer" || p.Type == "boolean") {
			if n, err := strconv.Atoi(v); err == nil {
				out[key] = n
			}
		} else if ok && p.Type == "number" {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out[key] = f
			}
		}
	}
	return out
}

// WithDescriptionAndDigest completes a GET config answer: the description
// (the file's comment lines, read as qemu-server does) and the file's
// digest.
func WithDescriptionAndDigest(out map[string]any, c *guestconf.Conf) map[string]any {
	if c.Description != "" {
		out["description"] = guestconf.VMDescription(c.Description)
	}
	out["digest"] = c.Digest
	return out
}

// GuestLockTask starts a task on node whose work f runs holding vmid's
// config lock (waiting up to LockTimeout) and the state lock.
func (s Model) GuestLockTask(rc *core.Req, node, typ string, vmid int, f func(t *core.TaskRun) string) string {
	return s.StartTaskLocked(rc, node, typ, strconv.Itoa(vmid), func(t *core.TaskRun) string {
		return s.underGuestLock(t, node, vmid, s.Cfg.Dur(s.Cfg.LockTimeout, core.DefaultLockTimeout), func() string {
			s.Mu.Lock()
			defer s.Mu.Unlock()
			return f(t)
		})
	})
}

// DropFromPoolsLocked is AccessControl.pm remove_vm_access, which
// qemu-server's and pve-container's destroy call on every destroy, purge
// or not (API2/Qemu.pm destroy_vm, API2/LXC.pm destroy_vm): the guest
// leaves its pool (user.cfg knows guests by VMID only) and the ACL subtree
// of /vms/<vmid> is deleted.
func DropFromPoolsLocked(db *core.ConfigDB, _ GuestKind, vmid int) {
	for _, p := range db.Pools {
		p.Members = slices.DeleteFunc(p.Members, func(m string) bool { n, ok := MemberVMID(m); return ok && n == vmid })
	}
	path := fmt.Sprintf("/vms/%d", vmid)
	db.Access.ACL = slices.DeleteFunc(db.Access.ACL, func(a access.ACLEntry) bool {
		return a.Path == path || strings.HasPrefix(a.Path, path+"/")
	})
}

// summaryFlags adds what a guest's list entry shows only when set:
// template, lock and tags.
func summaryFlags(e map[string]any, c *guestconf.Conf) map[string]any {
	if c.IsTemplate() {
		e["template"] = 1
	}
	if l := c.Lock(); l != "" {
		e["lock"] = l
	}
	if t := c.Keys["tags"]; t != "" {
		e["tags"] = t
	}
	return e
}

// asClusterResource turns a guest's list entry into its /cluster/resources
// entry: id, type, node, maxcpu for cpus, template 0 when not one, and
// status unknown while its node is down.
func (s Model) asClusterResource(r map[string]any, k GuestKind, e core.VMEntry) map[string]any {
	r["id"], r["type"], r["node"] = k.Member(e.VMID), k.Type, e.Node
	r["maxcpu"] = r["cpus"]
	delete(r, "cpus")
	if r["template"] == nil {
		r["template"] = 0
	}
	if !s.NodeUpLocked(e.Node) {
		r["status"] = "unknown"
	}
	if st := s.haStateOfGuestLocked(s.DBOf(e.Node), k.haSID(e.VMID)); st != "" {
		r["hastate"] = st
	}
	return r
}

// GuestListLocked is GET /nodes/{node}/qemu or /lxc: the node's guests of
// kind k that the caller may audit (filtered, not refused, K19), each as
// summary renders it; a config that cannot be read is left out.
func (s Model) GuestListLocked(rc *core.Req, k GuestKind, summary func(node string, vmid int, c *guestconf.Conf) map[string]any) []map[string]any {
	db := rc.DB()
	out := []map[string]any{}
	for _, e := range s.VMListLocked(db) {
		if e.Node != rc.Node || e.Kind != k.Dir {
			continue
		}
		if !core.HasPriv(db, rc.Who, fmt.Sprintf("/vms/%d", e.VMID), []string{"VM.Audit"}, false) {
			continue
		}
		c, err := s.LoadGuestConfLocked(db, k, e.Node, e.VMID)
		if err != nil {
			continue
		}
		out = append(out, summary(e.Node, e.VMID, c))
	}
	return out
}
