package qemu

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
)

// Update is a change of a VM's config: keys to set, keys to remove, and the
// digest of the read it was planned from (PVE refuses the change if the
// file changed since: a lost race is an error, not a silent overwrite).
type Update struct {
	Node   string
	VMID   int
	Set    map[string]string
	Delete []string
	Digest string
}

// Renderer is a typed value that prints as PVE stores it (Net, Drive,
// IPConfig, Agent, Boot).
type Renderer interface{ Render() (string, error) }

// SetTyped renders v into the update under key.
func (u *Update) SetTyped(key string, v Renderer) error {
	s, err := v.Render()
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	u.SetValue(key, s)
	return nil
}

// SetValue sets key to a raw value.
func (u *Update) SetValue(key, value string) {
	if u.Set == nil {
		u.Set = map[string]string{}
	}
	u.Set[key] = value
}

// Empty tells whether the update changes nothing (send nothing then).
func (u Update) Empty() bool { return len(u.Set) == 0 && len(u.Delete) == 0 }

// Params renders the update as the API's parameters.
func (u Update) Params() url.Values {
	q := url.Values{}
	for k, v := range u.Set {
		q.Set(k, v)
	}
	if len(u.Delete) > 0 {
		d := slices.Clone(u.Delete)
		slices.Sort(d)
		q.Set("delete", strings.Join(d, ","))
	}
	if u.Digest != "" {
		q.Set("digest", u.Digest)
	}
	return q
}

// Request is the update as PUT …/config, which qemu-server applies before
// it answers (no task). Use AsyncRequest for POST, which answers with a
// task id at once (for changes that allocate disks).
func (u Update) Request() apischema.Request {
	return apischema.New(http.MethodPut, ConfigPath, u.Params(), u.Node, strconv.Itoa(u.VMID))
}

// AsyncRequest is the update as POST …/config (a qmconfig task).
func (u Update) AsyncRequest() apischema.Request {
	r := apischema.New(http.MethodPost, ConfigPath, u.Params(), u.Node, strconv.Itoa(u.VMID))
	return withTask(r, u.Node, u.VMID, "qmconfig")
}

// withTask records the worker qemu-server starts for a call (API2/Qemu.pm
// fork_worker): its type(s) and the VMID in the task's id.
func withTask(r apischema.Request, node string, vmid int, types ...string) apischema.Request {
	r.Task = &apischema.TaskHint{Node: node, Types: slices.DeleteFunc(types, func(t string) bool { return t == "" }), ID: strconv.Itoa(vmid)}
	return r
}

// Clone is POST /nodes/{node}/qemu/{vmid}/clone. Node is the node that
// holds the template; Target the destination when it differs (K2). The
// answer is a task id at the UPID's node (K3).
type Clone struct {
	Node        string // where the source lives
	VMID        int    // the source
	NewID       int    // required: identity is the VMID (K1); never taken from /cluster/nextid here (K18)
	Name        string
	Target      string // destination node, "" = Node
	Full        *bool  // PVE's default: full for a VM, linked for a template
	Storage     string // full clones only
	Format      string // raw, qcow2, vmdk
	Pool        string // must exist (K6)
	Description string
	SnapName    string
	BWLimit     int // KiB/s; 0 = default
}

// Request renders the clone call.
func (c Clone) Request() apischema.Request {
	q := url.Values{"newid": {strconv.Itoa(c.NewID)}}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("name", c.Name)
	if c.Target != c.Node {
		set("target", c.Target)
	}
	if c.Full != nil {
		q.Set("full", boolStr(*c.Full))
	}
	set("storage", c.Storage)
	set("format", c.Format)
	set("pool", c.Pool)
	set("description", c.Description)
	set("snapname", c.SnapName)
	if c.BWLimit > 0 {
		q.Set("bwlimit", strconv.Itoa(c.BWLimit))
	}
	// The qmclone worker runs on the source's node, for the source's VMID.
	r := apischema.New(http.MethodPost, "/nodes/{node}/qemu/{vmid}/clone", q, c.Node, strconv.Itoa(c.VMID))
	// The schema's check: VM.Clone on the source and (VM.Allocate on the
	// new VMID or, with pool, on the pool); its failed "or" names nothing.
	r.Needs = fmt.Sprintf("VM.Clone on /vms/%d and VM.Allocate on /vms/%d", c.VMID, c.NewID)
	if c.Pool != "" {
		r.Needs += " or on /pool/" + c.Pool
	}
	return withTask(r, c.Node, c.VMID, "qmclone")
}

// Create is POST /nodes/{node}/qemu: a bare VM (a task). Config holds the
// create API's syntax ("scsi0": "local-lvm:32" allocates 32 GiB).
func Create(node string, vmid int, config map[string]string) apischema.Request {
	q := url.Values{"vmid": {strconv.Itoa(vmid)}}
	for k, v := range config {
		q.Set(k, v)
	}
	return withTask(apischema.New(http.MethodPost, "/nodes/{node}/qemu", q, node), node, vmid, "qmcreate")
}

// Resize is PUT …/resize: grow disk to size bytes (an absolute size; PVE
// refuses to shrink, K11). It answers with a task id on PVE 8 and 9.
func Resize(node string, vmid int, disk string, size int64, digest string) apischema.Request {
	q := url.Values{"disk": {disk}, "size": {strconv.FormatInt(size, 10)}}
	if digest != "" {
		q.Set("digest", digest)
	}
	return withTask(apischema.New(http.MethodPut, "/nodes/{node}/qemu/{vmid}/resize", q, node, strconv.Itoa(vmid)), node, vmid, "resize")
}

// Power is POST …/status/{start,stop,shutdown} (a task: qmstart, qmstop,
// qmshutdown — or hastart/hastop when HA manages the guest, which then
// only asks the HA manager; change the HA state instead, H4).
func Power(node string, vmid int, action string) apischema.Request {
	r := apischema.New(http.MethodPost, "/nodes/{node}/qemu/{vmid}/status/"+action, nil, node, strconv.Itoa(vmid))
	ha := map[string]string{"start": "hastart", "stop": "hastop", "shutdown": "hastop"}[action]
	return withTask(r, node, vmid, "qm"+action, ha)
}

// Template is POST …/template: qemu-server's template API checks the
// config (no lock, no snapshots, not already a template, not running)
// before it answers, then a qmtemplate worker sets template: 1 and turns
// every disk into a base volume (template_create → vdisk_create_base:
// vm-<vmid>-disk-N becomes base-<vmid>-disk-N). The answer is its task id.
func Template(node string, vmid int) apischema.Request {
	return withTask(apischema.New(http.MethodPost, "/nodes/{node}/qemu/{vmid}/template", nil, node, strconv.Itoa(vmid)), node, vmid, "qmtemplate")
}

// Destroy is DELETE /nodes/{node}/qemu/{vmid} (a task). purge also removes
// the VMID from backup, replication and HA configuration.
func Destroy(node string, vmid int, purge bool) apischema.Request {
	q := url.Values{}
	if purge {
		q.Set("purge", "1")
	}
	return withTask(apischema.New(http.MethodDelete, "/nodes/{node}/qemu/{vmid}", q, node, strconv.Itoa(vmid)), node, vmid, "qmdestroy")
}

func boolStr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Migrate is POST …/migrate at the VM's node: qemu-server's migrate_vm
// checks before it answers (target a member, quorum, lock, a running VM
// only online, storages on the target), then a qmigrate worker on that
// node moves the VM. For a guest HA manages, PVE forwards it to the HA
// manager (an hamigrate worker that runs `ha-manager migrate`): ask HA
// directly instead (ha.MigrateResource, H4).
type Migrate struct {
	Node, Target   string
	VMID           int
	Online         bool   // live migration of a running VM
	WithLocalDisks bool   // local volumes move with it (required online)
	TargetStorage  string // storage map for the local volumes ("" = each its own)
}

// Request renders the migrate call.
func (m Migrate) Request() apischema.Request {
	q := url.Values{"target": {m.Target}}
	if m.Online {
		q.Set("online", "1")
	}
	if m.WithLocalDisks {
		q.Set("with-local-disks", "1")
	}
	if m.TargetStorage != "" {
		q.Set("targetstorage", m.TargetStorage)
	}
	r := apischema.New(http.MethodPost, "/nodes/{node}/qemu/{vmid}/migrate", q, m.Node, strconv.Itoa(m.VMID))
	return withTask(r, m.Node, m.VMID, "qmigrate")
}
