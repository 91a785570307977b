package guests

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Backup jobs live in /etc/pve/jobs.cfg (vzdump sections); their endpoints
// are pvesim/backupsim's. A guest's destroy with purge edits them here.

// JobsCfg is the jobs file, relative to /etc/pve.
const JobsCfg = "jobs.cfg"

// removeFromBackupJobsLocked is pve-guest-common's
// VZDump::Plugin::remove_vmid_from_backup_jobs, which a destroy with purge
// runs: the VMID leaves every vzdump job's vmid list, and a job whose list
// it empties is deleted; a job over all guests loses it from its exclude
// list (an emptied exclude is dropped).
func (s Model) removeFromBackupJobsLocked(db *core.ConfigDB, vmid int) {
	list, _ := s.ReadSectionsLocked(db, JobsCfg)
	if len(list) == 0 {
		return
	}
	id := fmt.Sprint(vmid)
	without := func(l string) string {
		return strings.Join(slices.DeleteFunc(pveschema.SplitList(l), func(x string) bool { return x == id }), ",")
	}
	var out []*pvecommon.Section
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
	s.WriteSectionsLocked(db, JobsCfg, out)
}
