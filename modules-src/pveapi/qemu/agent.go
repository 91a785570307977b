package qemu

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// agentShape: the freeze keys are renamed between PVE 8 and 9
// (freeze-fs-on-backup and guest-fsfreeze are aliases of freeze-fs on 9
// only), so they are kept verbatim rather than resolved for one version.
var agentShape = pveformat.Shape{DefaultKey: "enabled",
	Booleans: []string{"enabled", "fstrim_cloned_disks", "freeze-fs-on-backup", "freeze-fs", "guest-fsfreeze"}}

// Agent is the `agent` option (QemuServer/Agent.pm $agent_fmt). Whether
// the key is there at all matters: only an absent key is "not configured"
// (assert_agent_available, K20) — see Config.Agent.
type Agent struct {
	Enabled           bool
	FstrimClonedDisks *bool  // fstrim_cloned_disks
	Type              string // virtio, isa
	Other             pveformat.Props
}

// ParseAgent reads an agent value ("1", "enabled=1,fstrim_cloned_disks=1").
func ParseAgent(value string) (Agent, error) {
	p, err := pveformat.Parse(value, agentShape)
	if err != nil {
		return Agent{}, fmt.Errorf("agent: %w", err)
	}
	t := &take{props: p, name: "agent"}
	a := Agent{FstrimClonedDisks: t.boolPtr("fstrim_cloned_disks"), Type: t.str("type")}
	if e := t.boolPtr("enabled"); e != nil {
		a.Enabled = *e
	}
	a.Other = t.rest()
	return a, t.err
}

// Render prints the value as PVE stores it: "1,fstrim_cloned_disks=1".
func (a Agent) Render() (string, error) {
	p := &put{}
	p.boolPtr("enabled", &a.Enabled)
	p.boolPtr("fstrim_cloned_disks", a.FstrimClonedDisks)
	p.str("type", a.Type)
	p.other(a.Other)
	return pveformat.Print(p.props, agentShape)
}
