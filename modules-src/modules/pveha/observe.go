package pveha

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// guestHA carries one run's knowledge from the stages to the report.
type guestHA struct {
	r *ansible.Run
	c *pveapi.Client
	p params

	major   int
	members []string
	guest   *clusterguests.Guest // nil: no such guest in the cluster
	sid     ha.SID

	jobs      []replication.Job // the guest's jobs after the run (predicted in check mode)
	followed  map[string]bool   // job ids HA relocation rewrote (kept, not drift)
	created   map[string]bool   // job ids this run creates
	mechanism ha.Mechanism
	resource  *ha.Resource // after the run; nil: none
	rule      *ha.Rule
	group     *ha.Group
	affinity  []ha.Rule
	quiet     bool            // preflight: plan without warning
	seen      haConfig        // the HA config the HA changes were planned from (digest.go)
	wrote     map[string]bool // /etc/pve/ha files this run sent a write to (digest.go)
	notYet    bool            // check mode only: the guest does not exist (yet)
	joining   map[string]bool // check mode only: nodes assumed members to be (memberToBe)

	// haRead is the HA config as last read, for the next observeHA until
	// this run sends a write (send) or waits (wait_first_sync): a no-op
	// run reads it once, not once per stage (issue 24 §3).
	haRead *haConfig
	// acted: this run sent a write (send) or waited for PVE (waitFor)
	// since observeBase listed the guests. Until then that list is what
	// the cluster shows now, and the report takes the guest's live state
	// from it instead of listing the guests again (issue 24 §3).
	acted bool
}

// notYetChange is the whole plan of a check run for a guest that does not
// exist yet (observeBase assumed, with ansible.NotYet, that an earlier task
// of the run — pve_clone — creates it): nothing of it can be compared, so
// the run predicts the chain as a whole.
func (g *guestHA) notYetChange() []ansible.Change {
	return []ansible.Change{ansible.PredictedOnly("guest:"+strconv.Itoa(g.p.VMID),
		fmt.Sprintf("replicate guest %d and make it highly available once it exists", g.p.VMID), nil)}
}

// observeBase reads what both stages start from: the version, the
// members and the guest, wherever it runs now (H3). Read once per run.
func (g *guestHA) observeBase(ctx context.Context) error {
	if g.major != 0 {
		return nil
	}
	v, err := g.c.Version(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the PVE version: %w", err)
	}
	// The members and the guests in one read (issue 24 §3).
	members, guests, err := clusterguests.NodesAndGuests(ctx, g.c)
	if err != nil {
		return fmt.Errorf("cannot list the cluster's nodes and guests: %w", err)
	}
	g.major, g.members = v.Major, members
	if found, ok := clusterguests.Find(guests, g.p.VMID); ok {
		g.guest = &found
		sid, err := ha.SID{VMID: g.p.VMID}.Resolve(found.Type)
		if err != nil {
			return fmt.Errorf("vmid: %w", err)
		}
		if g.p.Type != "" && g.p.Type != sid.Type {
			return fmt.Errorf("type: guest %d is a %s (%s), not a %s", g.p.VMID, sid.Type, found.Type, g.p.Type)
		}
		g.sid = sid
		return nil
	}
	// The guest list leaves out guests the token may not see (K19).
	if err := g.c.RequireAny(ctx, fmt.Sprintf("/vms/%d", g.p.VMID), "VM.Audit"); err != nil {
		return fmt.Errorf("vmid: cannot tell whether guest %d exists: %w", g.p.VMID, err)
	}
	if g.p.State != "absent" {
		// A check run of the whole site predicts the clone that would
		// create the guest, but that prediction lives in another task:
		// here the guest is simply not there yet. Check mode assumes it
		// when created_earlier names it (the stages predict "made highly available once it exists",
		// compared with nothing); a real run without the guest fails.
		missing := fmt.Errorf("vmid: no guest %d in the cluster (looked on every node: %s)", g.p.VMID, strings.Join(members, ", "))
		if err := g.r.NotYet(ansible.Prerequisite{Option: "vmid", Kind: ansible.CreatedGuest, Name: strconv.Itoa(g.p.VMID), Object: fmt.Sprintf("guest %d", g.p.VMID),
			Predicts: "its replication and HA as a whole, compared with nothing"}, missing); err != nil {
			return err
		}
		g.notYet = true
		return nil
	}
	// Absent and no guest: whatever is left of its HA config still goes.
	g.sid = ha.SID{Type: g.p.Type, VMID: g.p.VMID}
	if g.sid.Type == "" {
		// The type is not known from a guest: the leftover resource tells.
		g.sid.Type = "vm"
		if list, err := ha.Resources(ctx, g.c); err == nil {
			if _, ok := ha.FindResource(list, ha.SID{Type: "ct", VMID: g.p.VMID}); ok {
				g.sid.Type = "ct"
			}
		}
	}
	return nil
}

// disk is one volume of the guest that replication must carry.
type disk struct {
	Key, Volume, Storage string
}

// disks lists the guest's volumes as PVE's get_replicatable_volumes looks
// at them: CD-ROMs (cloud-init drives included, regenerated at start) and
// drives marked replicate=0 are skipped.
func (g *guestHA) disks(ctx context.Context) ([]disk, error) {
	kind := "qemu"
	if g.sid.Type == "ct" {
		kind = "lxc"
	}
	var cfg map[string]any
	if err := g.c.Get(ctx, pveapi.Path("/nodes/%s/%s/%s/config", g.guest.Node, kind, strconv.Itoa(g.p.VMID)), nil, &cfg); err != nil {
		return nil, fmt.Errorf("cannot read the config of guest %d on %s: %w", g.p.VMID, g.guest.Node, err)
	}
	var out []disk
	for _, key := range slices.Sorted(maps.Keys(cfg)) {
		val := pveapi.String(cfg[key])
		var vol string
		switch {
		case kind == "qemu" && qemu.IsDisk(key):
			d, err := qemu.ParseDrive(key, val)
			if err != nil {
				return nil, fmt.Errorf("guest %d %s: %w", g.p.VMID, key, err)
			}
			if d.IsCDROM() || d.IsCloudInit() || propOf(val, "replicate") == "0" {
				continue
			}
			vol = d.File
		case kind == "lxc" && (key == "rootfs" || isMountPoint(key)):
			if propOf(val, "replicate") == "0" {
				continue
			}
			vol = strings.SplitN(val, ",", 2)[0]
			vol = strings.TrimPrefix(vol, "volume=")
		default:
			continue
		}
		store, _, ok := strings.Cut(vol, ":")
		if !ok || strings.HasPrefix(vol, "/") {
			continue // a bind mount or device: not a storage volume
		}
		out = append(out, disk{Key: key, Volume: vol, Storage: store})
	}
	return out, nil
}

func isMountPoint(key string) bool {
	n, ok := strings.CutPrefix(key, "mp")
	if !ok {
		return false
	}
	_, err := strconv.Atoi(n)
	return err == nil
}

func propOf(val, key string) string {
	for _, part := range strings.Split(val, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// linkedClone is the base volume a linked clone's volume is made from
// ("base-9000-disk-0" in "tank:base-9000-disk-0/vm-301-disk-0", the
// <base>/<name> volume name of pve-storage's clone_image), or "".
func linkedClone(volume string) string {
	_, name, _ := strings.Cut(volume, ":")
	base, _, ok := strings.Cut(name, "/")
	if !ok || !strings.HasPrefix(base, "base-") {
		return ""
	}
	return base
}

type storageDef struct {
	Storage string `json:"storage"`
	Type    string `json:"type"`
	Shared  int    `json:"shared"`
	Nodes   string `json:"nodes"`
	Pool    string `json:"pool"`
}

type nodeStorage struct {
	Storage string `json:"storage"`
	Active  int    `json:"active"`
	Enabled int    `json:"enabled"`
}

// checkReplicatable refuses, before any write, a guest whose disks cannot
// replicate to targets (H6): every local disk on a zfspool storage, and
// that storage defined and active on every target.
func (g *guestHA) checkReplicatable(ctx context.Context, targets []string) error {
	disks, err := g.disks(ctx)
	if err != nil {
		return err
	}
	var defs []storageDef
	if err := g.c.Get(ctx, "/storage", nil, &defs); err != nil {
		return fmt.Errorf("cannot read the storage definitions: %w", err)
	}
	byID := map[string]storageDef{}
	for _, d := range defs {
		byID[d.Storage] = d
	}
	var problems []string
	var zfs []disk
	for _, d := range disks {
		def, ok := byID[d.Storage]
		switch {
		case !ok:
			// K19: GET /storage leaves out the storages the API user may
			// not audit; an absent one may only be hidden.
			problems = append(problems, fmt.Sprintf("disk %s (%s) is on storage %s, which is not defined or which the API user may not see "+
				"(PVE lists a storage only with Datastore.Audit on /storage/%s or Datastore.AllocateSpace on /storage/%s)", d.Key, d.Volume, d.Storage, d.Storage, d.Storage))
		case def.Shared == 1 || storagetype.Shared(def.Type, 0):
			// Shared storage: every node sees it, nothing to replicate.
		case !storagetype.Of(def.Type).Replicates:
			problems = append(problems, fmt.Sprintf("disk %s (%s) is on storage %s of type %s, which cannot replicate: only zfspool storages can (H6); move the disk to a ZFS pool storage present on every target", d.Key, d.Volume, d.Storage, def.Type))
		case linkedClone(d.Volume) != "":
			// qemu-server's migration refuses a local clone of a base
			// volume ("can't migrate '<vol>' as it's a clone of '<base>'",
			// QemuMigrate scan_local_volumes), and a recovery elsewhere
			// finds no base to start from: HA can never move it (H8).
			problems = append(problems, fmt.Sprintf("disk %s (%s) is a linked clone of %s, which exists only on the template's node: HA can never move it (H8, PVE: can't migrate a clone of a base volume); make it a full clone (pve_clone full: true)", d.Key, d.Volume, linkedClone(d.Volume)))
		default:
			zfs = append(zfs, d)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("targets: guest %d cannot be replicated: %s", g.p.VMID, strings.Join(problems, "; "))
	}
	if len(zfs) == 0 {
		return fmt.Errorf("targets: guest %d has no disk on a zfspool storage, nothing to replicate (PVE: No replicatable volumes found); give targets: [] for a guest on shared storage", g.p.VMID)
	}
	for _, t := range targets {
		if g.joining[t] {
			// Not in the cluster this check run reads: the real run, with
			// the node a member, checks its storage (memberToBe).
			continue
		}
		for _, d := range zfs {
			def := byID[d.Storage]
			if def.Nodes != "" && !slices.Contains(pveapi.SplitList(def.Nodes), t) {
				problems = append(problems, fmt.Sprintf("disk %s (%s): storage %s is not available on node %s (its nodes are %s)", d.Key, d.Volume, d.Storage, t, def.Nodes))
				continue
			}
			var st []nodeStorage
			if err := g.c.Get(ctx, pveapi.Path("/nodes/%s/storage", t), map[string][]string{"storage": {d.Storage}}, &st); err != nil {
				problems = append(problems, fmt.Sprintf("disk %s: cannot read storage %s on node %s: %v", d.Key, d.Storage, t, err))
				continue
			}
			if len(st) == 0 || st[0].Active != 1 {
				problems = append(problems, fmt.Sprintf("disk %s (%s): storage %s (ZFS pool %s) is not active on node %s: the pool must exist there under the same name (H6)", d.Key, d.Volume, d.Storage, def.Pool, t))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("targets: guest %d cannot be replicated: %s", g.p.VMID, strings.Join(slices.Compact(problems), "; "))
	}
	return nil
}

// waitFor polls cond every poll until it holds, wait_timeout passes or the
// run's deadline ends; what says what is waited for.
func (g *guestHA) waitFor(ctx context.Context, what string, cond func(ctx context.Context) (bool, string, error)) error {
	g.acted = true
	deadline := time.Now().Add(time.Duration(g.p.WaitTimeout) * time.Second)
	poll := 200 * time.Millisecond
	last := ""
	for {
		ok, state, err := cond(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		last = state
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %ds (wait_timeout) for %s: %s", g.p.WaitTimeout, what, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last seen: %s)", what, ctx.Err(), last)
		case <-time.After(poll):
		}
		if poll < 2*time.Second {
			poll *= 2
		}
	}
}

// reportedGuest is the guest's node and status for the report: the list
// observeBase read when the run has neither written nor waited since (a
// converged run lists the guests once), else a fresh read (liveGuest).
func (g *guestHA) reportedGuest(ctx context.Context) (clusterguests.Guest, bool, error) {
	if !g.acted && g.guest != nil {
		return *g.guest, true, nil
	}
	return g.liveGuest(ctx)
}

// liveGuest reads the guest's node and status from the cluster's list.
func (g *guestHA) liveGuest(ctx context.Context) (clusterguests.Guest, bool, error) {
	guests, err := clusterguests.Guests(ctx, g.c)
	if err != nil {
		return clusterguests.Guest{}, false, err
	}
	found, ok := clusterguests.Find(guests, g.p.VMID)
	return found, ok, nil
}
