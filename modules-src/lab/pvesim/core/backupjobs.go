package core

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Backup jobs: the vzdump sections of /etc/pve/jobs.cfg, as pve-manager's
// PVE/API2/Backup.pm serves them (index, create_job, read_job,
// delete_job). Only what a guest's destroy with purge touches is
// simulated: the jobs are stored, listed and removed, never run.
// Reconstructions: `next-run` is not computed, the legacy vzdump.cron is
// not read, and the job's options are kept as given.

const jobsCfg = "jobs.cfg"

// backupJob is a job as the API lists it: its options (typed as the
// create schema types them: booleans and integers as numbers), id and type.
func (s *Sim) backupJob(sec *section) map[string]any {
	e := map[string]any{"id": sec.ID, "type": "vzdump"}
	var props map[string]*pveschema.Prop
	if m := s.schema.Method("POST", "/cluster/backup"); m != nil && m.Parameters != nil {
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
func (s *Sim) getBackupJobs(rc *Req) (any, error) {
	list, _ := s.ReadSectionsLocked(rc.DB(), jobsCfg)
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
func (s *Sim) postBackupJob(rc *Req) (any, error) {
	db := rc.DB()
	if !rc.Has("schedule") && !rc.Has("starttime") {
		return nil, ErrParams(map[string]string{"schedule": "neither 'starttime' nor 'schedule' were set"})
	}
	id := rc.Str("id")
	if id == "" {
		id = NewUUID()
	}
	list, _ := s.ReadSectionsLocked(db, jobsCfg)
	if findSection(list, id) != nil {
		return nil, pvecommon.Die("Job '%s' already exists", id)
	}
	opts := map[string]string{"enabled": "1"}
	for k := range rc.Params {
		if k != "id" {
			opts[k] = rc.Str(k)
		}
	}
	list = append(list, &section{Type: "vzdump", ID: id, Opts: opts})
	s.WriteSectionsLocked(db, jobsCfg, list)
	s.SaveLocked()
	return nil, nil
}

// GET /cluster/backup/{id}
func (s *Sim) getBackupJob(rc *Req) (any, error) {
	list, _ := s.ReadSectionsLocked(rc.DB(), jobsCfg)
	sec := findSection(list, rc.Str("id"))
	if sec == nil || sec.Type != "vzdump" {
		return nil, ErrParams(map[string]string{"id": fmt.Sprintf("No such job '%s'", rc.Str("id"))})
	}
	return s.backupJob(sec), nil
}

// DELETE /cluster/backup/{id}
func (s *Sim) deleteBackupJob(rc *Req) (any, error) {
	db := rc.DB()
	list, _ := s.ReadSectionsLocked(db, jobsCfg)
	id := rc.Str("id")
	sec := findSection(list, id)
	if sec == nil || sec.Type != "vzdump" {
		return nil, ErrParams(map[string]string{"id": fmt.Sprintf("No such job '%s'", id)})
	}
	s.WriteSectionsLocked(db, jobsCfg, slices.DeleteFunc(list, func(x *section) bool { return x == sec }))
	s.SaveLocked()
	return nil, nil
}

// removeFromBackupJobsLocked is pve-guest-common's
// VZDump::Plugin::remove_vmid_from_backup_jobs, which a destroy with purge
// runs: the VMID leaves every vzdump job's vmid list, and a job whose list
// it empties is deleted; a job over all guests loses it from its exclude
// list (an emptied exclude is dropped).
func (s *Sim) removeFromBackupJobsLocked(db *ConfigDB, vmid int) {
	list, _ := s.ReadSectionsLocked(db, jobsCfg)
	if len(list) == 0 {
		return
	}
	id := fmt.Sprint(vmid)
	without := func(l string) string {
		return strings.Join(slices.DeleteFunc(pveschema.SplitList(l), func(x string) bool { return x == id }), ",")
	}
	var out []*section
	for _, sec := range list {
		if sec.Type == "vzdump" {
			if l, ok := sec.Opts["vmid"]; ok {
				if sec.Opts["vmid"] = without(l); sec.Opts["vmid"] == "" {
					continue // remove_vmid_from_job returned undef: the job goes
				}
			} else if l, ok := sec.Opts["exclude"]; ok {
				if sec.Opts["exclude"] = without(l); sec.Opts["exclude"] == "" {
					delete(sec.Opts, "exclude")
				}
			}
		}
		out = append(out, sec)
	}
	s.WriteSectionsLocked(db, jobsCfg, out)
}

// backupRoutes are the backup job endpoints.
func (s *Sim) backupRoutes() map[string]Handler {
	return map[string]Handler{
		"GET /cluster/backup":         s.getBackupJobs,
		"POST /cluster/backup":        s.postBackupJob,
		"GET /cluster/backup/{id}":    s.getBackupJob,
		"DELETE /cluster/backup/{id}": s.deleteBackupJob,
	}
}
