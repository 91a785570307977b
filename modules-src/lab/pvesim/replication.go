package pvesim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"

	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// Storage replication jobs, /etc/pve/replication.cfg (pve-manager
// PVE/API2/ReplicationConfig.pm, pve-guest-common ReplicationConfig.pm):
// id <vmid>-<n>, one job per guest and target, only ZFS volumes replicate
// (H6: volume_has_feature replicate is ZFSPoolPlugin's alone). DELETE only
// marks the job (remove_job full, or local with keep); the source node's
// next pvesr run — Config.ReplicationInterval, a minute in PVE — removes it,
// and never while the source node is down (force=1 drops it at once).
// The runs are replrun.go's.

const replicationCfg = "replication.cfg"

var replIDRe = regexp.MustCompile(`^(\d+)-(\d+)$`)

// parseReplID is parse_replication_job_id.
func parseReplID(id string) (int, error) {
	m := replIDRe.FindStringSubmatch(id)
	if m == nil {
		return 0, fmt.Errorf("invalid replication job id '%s'", id)
	}
	g, _ := strconv.Atoi(m[1])
	if g < 100 {
		return 0, fmt.Errorf("invalid replication job id '%s' (guest IDs < 100 are reserved)", id)
	}
	return g, nil
}

// replJobGuest parses a job id and checks VM.Replicate on its guest, as
// every replication call of PVE::API2::ReplicationConfig does first on PVE
// 9. PVE 8 has no VM.Replicate (pve-access-control added it in 9.0): its
// schema's checks (Datastore.Allocate on /storage) are all there is.
func replJobGuest(rc *reqCtx, db *ConfigDB, id string) (int, error) {
	guest, err := parseReplID(id)
	if err != nil {
		return 0, err
	}
	if rc.who.ver != 8 && !hasPriv(db, rc.who, fmt.Sprintf("/vms/%d", guest), []string{"VM.Replicate"}, false) {
		return 0, errPerm(fmt.Sprintf("/vms/%d, VM.Replicate", guest))
	}
	return guest, nil
}

// replUpdatable are the options a job update may set or delete (the
// replication section type's non-fixed options).
var replUpdatable = []string{"schedule", "rate", "comment", "disable", "source", "remove_job"}

// replView renders a job for the API: options typed, plus id, guest, jobnum.
func replView(sec *section, digest string) map[string]any {
	out := map[string]any{"id": sec.ID, "type": sec.Type}
	for k, v := range sec.Opts {
		out[k] = v
	}
	g, _ := parseReplID(sec.ID)
	out["guest"] = g
	if m := replIDRe.FindStringSubmatch(sec.ID); m != nil {
		n, _ := strconv.Atoi(m[2])
		out["jobnum"] = n
	}
	if r, ok := sec.Opts["rate"]; ok {
		if f, err := strconv.ParseFloat(r, 64); err == nil {
			out["rate"] = f
		}
	}
	if d, ok := sec.Opts["disable"]; ok {
		n, _ := strconv.Atoi(d)
		out["disable"] = n
	}
	if digest != "" {
		out["digest"] = digest
	}
	return out
}

func (s *Sim) getReplicationJobs(rc *reqCtx) (any, error) {
	db := rc.db()
	list, _ := s.readSectionsLocked(db, replicationCfg)
	out := []map[string]any{}
	for _, sec := range list {
		g, _ := parseReplID(sec.ID)
		if !hasPriv(db, rc.who, fmt.Sprintf("/vms/%d", g), []string{"VM.Audit"}, false) {
			continue // filtered (K19)
		}
		out = append(out, replView(sec, ""))
	}
	return out, nil
}

func (s *Sim) getReplicationJob(rc *reqCtx) (any, error) {
	db := rc.db()
	list, digest := s.readSectionsLocked(db, replicationCfg)
	sec := findSection(list, rc.str("id"))
	if sec == nil {
		return nil, fmt.Errorf("no such replication job '%s'", rc.str("id"))
	}
	return replView(sec, digest), nil
}

// replicatableVolumes is get_replicatable_volumes for a VM config: shared
// and foreign volumes are skipped, a local volume without the replicate
// feature is an error.
func (s *Sim) replicatableVolumes(node string, vmid int, c *qmConf) ([]string, error) {
	db := s.dbOf(node)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		var d drive
		switch {
		case isDriveKey(k):
			d = parseDrive(c.Keys[k])
		case ctVolKeyRe.MatchString(k): // a container's rootfs and mount points
			d = drive{props: parseProps(c.Keys[k], "volume")}
			d.props.set("file", d.props.get("volume"))
		default:
			continue
		}
		if d.cdrom() || d.props.get("replicate") == "0" {
			continue
		}
		store, vn, ok := volumeID(d.file())
		if !ok {
			continue
		}
		st := db.Storage[store]
		if st == nil || st.shared() || volOwner(vn) != vmid {
			continue
		}
		if !storagetype.Of(st.Type).Replicates {
			return nil, fmt.Errorf("missing replicate feature on volume '%s'", d.file())
		}
		out = append(out, d.file())
	}
	return out, nil
}

func (s *Sim) postReplicationJob(rc *reqCtx) (any, error) {
	db := rc.db()
	id, target := rc.str("id"), rc.str("target")
	guest, err := replJobGuest(rc, db, id)
	if err != nil {
		return nil, err
	}
	e, ok := s.findVMLocked(db, guest)
	if !ok {
		return nil, pveDie("Guest '%d' does not exist.", guest)
	}
	if !slices.Contains(s.membersLocked(rc.node), target) {
		return nil, pveDie("Target '%s' does not exist.", target)
	}
	if src := rc.str("source"); src != "" && src != e.Node {
		return nil, pveDie("Source '%s' does not match current node of guest '%d' (%s)", src, guest, e.Node)
	}
	if target == e.Node {
		return nil, pveDie("Source and target must not be identical")
	}
	var c *qmConf
	if e.Kind == "lxc" {
		c, err = s.loadCtConfLocked(db, e.Node, guest)
	} else {
		c, err = s.loadQmConfLocked(db, e.Node, guest)
	}
	if err != nil {
		return nil, err
	}
	vols, err := s.replicatableVolumes(e.Node, guest, c)
	if err != nil {
		return nil, err
	}
	if len(vols) == 0 {
		return nil, pveDie("No replicatable volumes found")
	}
	if !s.quorateLocked(db) {
		// ReplicationConfig::lock without a message: cfs_lock_file's own.
		e := errStatus(500, "cfs-lock 'file-replication_cfg' error: no quorum!")
		e.wait = s.cfg.dur(s.cfg.LockTimeout, DefaultLockTimeout)
		return nil, e
	}
	list, _ := s.readSectionsLocked(db, replicationCfg)
	if findSection(list, id) != nil {
		return nil, fmt.Errorf("replication job '%s' already exists", id)
	}
	for _, j := range list {
		if g, _ := parseReplID(j.ID); g == guest && j.Opts["target"] == target {
			return nil, fmt.Errorf("replication job for guest '%d' to target 'local/%s' already exists", guest, target)
		}
	}
	sec := &section{Type: "local", ID: id, Opts: map[string]string{"target": target, "source": e.Node}}
	for _, k := range []string{"schedule", "rate", "comment", "disable"} {
		if rc.has(k) {
			sec.Opts[k] = rc.str(k)
		}
	}
	s.writeSectionsLocked(db, replicationCfg, append(list, sec))
	s.saveLocked()
	return nil, nil
}

func (s *Sim) putReplicationJob(rc *reqCtx) (any, error) {
	db := rc.db()
	id := rc.str("id")
	if _, err := replJobGuest(rc, db, id); err != nil {
		return nil, err
	}
	list, digest := s.readSectionsLocked(db, replicationCfg)
	if d := rc.str("digest"); d != "" && d != digest {
		return nil, pveDie("detected modified configuration - file changed by other user? Try again.")
	}
	sec := findSection(list, id)
	if sec == nil {
		return nil, fmt.Errorf("no such job '%s'", id)
	}
	if rc.has("target") {
		return nil, fmt.Errorf("can't change value of fixed parameter 'target'") // SectionConfig check_config
	}
	for _, k := range replUpdatable {
		if rc.has(k) {
			sec.Opts[k] = rc.str(k)
		}
	}
	for _, k := range pveSplit(rc.str("delete")) {
		switch {
		case slices.Contains(replUpdatable, k):
			delete(sec.Opts, k)
		case k == "target" || k == "type" || k == "id":
			return nil, fmt.Errorf("unable to delete required option '%s'", k)
		default:
			return nil, fmt.Errorf("no such option '%s'", k)
		}
	}
	s.writeSectionsLocked(db, replicationCfg, list)
	s.saveLocked()
	return nil, nil
}

func (s *Sim) deleteReplicationJob(rc *reqCtx) (any, error) {
	db := rc.db()
	id := rc.str("id")
	if _, err := replJobGuest(rc, db, id); err != nil {
		return nil, err
	}
	list, _ := s.readSectionsLocked(db, replicationCfg)
	if rc.boolean("force") {
		if rc.boolean("keep") {
			return nil, errParams(map[string]string{"keep": "conflicts with parameter 'force'"})
		}
		list = slices.DeleteFunc(list, func(j *section) bool { return j.ID == id })
		s.writeSectionsLocked(db, replicationCfg, list)
		s.saveLocked()
		return nil, nil
	}
	sec := findSection(list, id)
	if sec == nil {
		return nil, fmt.Errorf("no such job '%s'", id)
	}
	sec.Opts["remove_job"] = "full"
	if rc.boolean("keep") {
		sec.Opts["remove_job"] = "local"
	}
	s.writeSectionsLocked(db, replicationCfg, list)
	s.saveLocked()
	return nil, nil
}

// replicationJobsOf lists the job ids of a guest (destroy refuses them).
func (s *Sim) replicationJobsOf(db *ConfigDB, vmid int) []string {
	list, _ := s.readSectionsLocked(db, replicationCfg)
	var out []string
	for _, j := range list {
		if g, _ := parseReplID(j.ID); g == vmid {
			out = append(out, j.ID)
		}
	}
	return out
}
