package pvestorage

import (
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
)

// The module's own checks agree with the lab's schema validator (which
// follows pve-common's JSONSchema.pm) on accept/reject, for values of the
// formats the module checks itself.
func TestCheckValueAgreesWithSchema(t *testing.T) {
	samples := map[string][]string{
		"storage":     {"nvme-vm", "local", "a", "Bad_ID!", "x.y_z-1", "9lives", "ends-"},
		"nodes":       {"pve01,pve02", "pve_01", "pve01 pve02", "-bad"},
		"content":     {"images,rootdir", "iso", "isos", "snippets,import"},
		"path":        {"/srv/x"}, // PVE's verify_path also refuses relative paths and ; ( ), the lab does not check
		"fingerprint": {"AA:" + repeat("BB:", 30) + "CC", "AA:BB"},
		"sparse":      {"0", "1", "yes"},
		"format":      {"raw", "qcow3"},
		"port":        {"8007", "0", "70000", "x"},
		// issue 15 item 5: PVE's prune-backups format (Plugin.pm)
		"prune-backups": {"keep-last=3,keep-weekly=2", "keep-forever=1", "keep-lats=3", "keep-last=x", "keep-last=-1",
			"keep-all=1", "keep-all=yes", "keep-all=maybe", "keep-all=1,keep-last=3", "keep-all=1,keep-last=0",
			"keep-all=0,keep-daily=7", "keep-last=1,keep-last=2", "keep-last=", "keep-last=0"},
		"bwlimit":               {"clone=100,default=50", "fast=1"},
		"max-protected-backups": {"-1", "5", "-2"},
	}
	for _, v := range []int{8, 9} {
		s, err := pveschema.Load(v)
		if err != nil {
			t.Fatal(err)
		}
		m := s.Method("POST", "/storage")
		for key, values := range samples {
			for _, val := range values {
				errs := m.Validate(map[string]any{"storage": "ok-id", "type": "dir", key: val})
				schemaOK := errs[key] == ""
				var mine error
				if key == "storage" {
					mine = checkStorageID(val)
				} else {
					mine = checkValue(schemaFor(v)[key], val)
				}
				if (mine == nil) != schemaOK {
					t.Errorf("PVE %d %s=%q: module says %v, schema says %q", v, key, val, mine, errs[key])
				}
			}
		}
	}
}

func repeat(s string, n int) string {
	out := ""
	for i := 0; i < n; i++ {
		out += s
	}
	return out
}
