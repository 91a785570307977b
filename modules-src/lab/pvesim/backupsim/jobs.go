// Package backupsim simulates PVE's backup job endpoints: the vzdump
// sections of /etc/pve/jobs.cfg as pve-manager's PVE/API2/Backup.pm serves
// them (index, create_job, read_job, delete_job). Only what a guest's
// destroy with purge touches is simulated: the jobs are stored, listed and
// removed, never run; that purge (remove_vmid_from_backup_jobs) is core's,
// with the guests. Reconstructions: `next-run` is not computed, the legacy
// vzdump.cron is not read, and the job's options are kept as given.
package backupsim

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// backend serves the backup job endpoints on the core's state.
type backend struct{ *core.Sim }

// Register adds the backup job endpoints to s.
func Register(s *core.Sim) { s.Handle((&backend{s}).routes()) }

// backupJob is a job as the API lists it: its options (typed as the
// create schema types them: booleans and integers as numbers), id and type.
func (s *backend) backupJob(sec *pvecommon.Section) map[string]any {
	e := map[string]any{"id": sec.ID, "type": "vzdump"}
	var props map[string]*pveschema.Prop
	if m := s.Schema().Method("POST", "/cluster/backup"); m != nil && m.Parameters != nil {
		props = m.Parameters.Properties
	}
	for k, v := range sec.Opts {
		e[k] = v
		if p := props[k]; p != nil && (p.Type == "boolean" || p.Type == "integer") {
			if n, err := strconv.Atoi(v); err == nil {
				e[k] = n
			}
		}
	}
	return e
}

// GET /cluster/backup
func (s *backend) getBackupJobs(rc *core.Req) (any, error) {
	list, _ := s.ReadSectionsLocked(rc.DB(), guests.JobsCfg)
	out := []map[string]any{}
	for _, sec := range list {
		if sec.Type == "vzdump" {
			out = append(out, s.backupJob(sec))
		}
	}
	return out, nil
}

// POST /cluster/backup: create_job — a schedule is required
// ($schedule_param_check), the id defaults to a UUID, an existing id dies
// inside the jobs.cfg lock, enabled defaults to 1.
func (s *backend) postBackupJob(rc *core.Req) (any, error) {
	db := rc.DB()
	if !rc.Has("schedule") && !rc.Has("starttime") {
		return nil, core.ErrParams(map[string]string{"schedule": "neither 'starttime' nor 'schedule' were set"})
	}
	id := rc.Str("id")
	if id == "" {
		id = core.NewUUID()
	}
	list, _ := s.ReadSectionsLocked(db, guests.JobsCfg)
	if pvecommon.FindSection(list, id) != nil {
		return nil, pvecommon.Die("Job '%s' already exists", id)
	}
	opts := map[string]string{"enabled": "1"}
	for k := range rc.Params {
		if k != "id" {
			opts[k] = rc.Str(k)
		}
	}
	list = append(list, &pvecommon.Section{Type: "vzdump", ID: id, Opts: opts})
	s.WriteSectionsLocked(db, guests.JobsCfg, list)
	s.SaveLocked()
	return nil, nil
}

// GET /cluster/backup/{id}
func (s *backend) getBackupJob(rc *core.Req) (any, error) {
	list, _ := s.ReadSectionsLocked(rc.DB(), guests.JobsCfg)
	sec := pvecommon.FindSection(list, rc.Str("id"))
	if sec == nil || sec.Type != "vzdump" {
		return nil, core.ErrParams(map[string]string{"id": fmt.Sprintf("No such job '%s'", rc.Str("id"))})
	}
	return s.backupJob(sec), nil
}

// DELETE /cluster/backup/{id}
func (s *backend) deleteBackupJob(rc *core.Req) (any, error) {
	db := rc.DB()
	list, _ := s.ReadSectionsLocked(db, guests.JobsCfg)
	id := rc.Str("id")
	sec := pvecommon.FindSection(list, id)
	if sec == nil || sec.Type != "vzdump" {
		return nil, core.ErrParams(map[string]string{"id": fmt.Sprintf("No such job '%s'", id)})
	}
	s.WriteSectionsLocked(db, guests.JobsCfg, slices.DeleteFunc(list, func(x *pvecommon.Section) bool { return x == sec }))
	s.SaveLocked()
	return nil, nil
}

// routes are the backup job endpoints.
func (s *backend) routes() map[string]core.Handler {
	return map[string]core.Handler{
		"GET /cluster/backup":         s.getBackupJobs,
		"POST /cluster/backup":        s.postBackupJob,
		"GET /cluster/backup/{id}":    s.getBackupJob,
		"DELETE /cluster/backup/{id}": s.deleteBackupJob,
	}
}
