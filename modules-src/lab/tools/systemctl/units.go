// Package systemctl is the lab's systemctl stand-in: the units a PVE node
// has, enable/start state kept per node in state_dir, output and exit codes
// of systemd 252/257 for what Ansible's systemd module and our modules call.
// Every start/stop/restart/reload is logged with a timestamp and a counter,
// so tests can assert that a service was restarted only when needed (B3).
package systemctl

import (
	"strings"
)

// unitDef is a unit file the node has.
type unitDef struct {
	name        string // "pveproxy.service", or a template "zfs-scrub-monthly@.timer"
	description string // %i is replaced by the instance
	enabled     string // vendor state: enabled, disabled, static
	active      bool   // running after boot
	wantedBy    string // install target
	unit        string // for timers: the unit they trigger (%i replaced)
	calendar    string
}

var catalog = []unitDef{
	{name: "pveproxy.service", description: "PVE API Proxy Server", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	{name: "pvedaemon.service", description: "PVE API Daemon", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	{name: "pvestatd.service", description: "PVE Status Daemon", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	{name: "pve-cluster.service", description: "The Proxmox VE cluster filesystem", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	{name: "pve-firewall.service", description: "Proxmox VE firewall", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	{name: "pve-ha-lrm.service", description: "PVE Local HA Resource Manager Daemon", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	{name: "pve-ha-crm.service", description: "PVE Cluster HA Resource Manager Daemon", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	{name: "spiceproxy.service", description: "PVE SPICE Proxy Server", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	// corosync is enabled but only runs once /etc/corosync/corosync.conf exists (a cluster).
	{name: "corosync.service", description: "Corosync Cluster Engine", enabled: "enabled", active: false, wantedBy: "multi-user.target"},
	{name: "ssh.service", description: "OpenBSD Secure Shell server", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	{name: "cron.service", description: "Regular background program processing daemon", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	{name: "chrony.service", description: "chrony, an NTP client/server", enabled: "enabled", active: true, wantedBy: "multi-user.target"},
	{name: "zfs-zed.service", description: "ZFS Event Daemon (zed)", enabled: "enabled", active: true, wantedBy: "zfs.target"},
	{name: "zfs-mount.service", description: "Mount ZFS filesystems", enabled: "enabled", active: true, wantedBy: "zfs.target"},
	{name: "zfs-import-cache.service", description: "Import ZFS pools by cache file", enabled: "enabled", active: true, wantedBy: "zfs-import.target"},
	{name: "zfs-scrub-monthly@.timer", description: "Monthly zpool scrub timer for %i", enabled: "disabled", wantedBy: "timers.target", unit: "zfs-scrub@%i.service", calendar: "monthly"},
	{name: "zfs-scrub-weekly@.timer", description: "Weekly zpool scrub timer for %i", enabled: "disabled", wantedBy: "timers.target", unit: "zfs-scrub@%i.service", calendar: "weekly"},
	{name: "zfs-scrub@.service", description: "zpool scrub on %i", enabled: "static"},
	{name: "zfs-trim-monthly@.timer", description: "Monthly zpool trim timer for %i", enabled: "disabled", wantedBy: "timers.target", unit: "zfs-trim@%i.service", calendar: "monthly"},
}

var aliases = map[string]string{"sshd.service": "ssh.service"}

// unitSuffixes are the unit types systemctl recognises in a name.
var unitSuffixes = []string{".service", ".timer", ".socket", ".target", ".mount", ".path", ".slice", ".scope", ".device", ".swap", ".automount"}

// normalize adds ".service" to a bare name, as systemctl does.
func normalize(name string) string {
	for _, s := range unitSuffixes {
		if strings.HasSuffix(name, s) {
			return name
		}
	}
	return name + ".service"
}

// unit is a resolved unit: its definition and, for template instances, the instance.
type unit struct {
	id       string
	def      *unitDef
	instance string
	alias    string // the name asked for when it is an alias (sshd.service)
}

// lookup resolves a name. Like real systemd, any instance of an existing
// template loads (zfs-scrub-monthly@anything.timer is a valid unit even if
// no pool of that name exists: the scrub would fail only when it fires).
func lookup(name string) unit {
	id := normalize(name)
	alias := ""
	if a, ok := aliases[id]; ok {
		id, alias = a, id
	}
	for i := range catalog {
		d := &catalog[i]
		if d.name == id {
			return unit{id: id, def: d, alias: alias}
		}
		if tmpl, ok := strings.CutSuffix(d.name, "@"+suffixOf(d.name)); ok && !strings.HasSuffix(id, "@"+suffixOf(d.name)) {
			inst, ok := strings.CutPrefix(id, tmpl+"@")
			if ok && strings.HasSuffix(inst, suffixOf(d.name)) {
				inst = strings.TrimSuffix(inst, suffixOf(d.name))
				if inst != "" {
					return unit{id: id, def: d, instance: inst}
				}
			}
		}
	}
	return unit{id: id}
}

func suffixOf(name string) string {
	return name[strings.LastIndexByte(name, '.'):]
}

func (u unit) expand(s string) string { return strings.ReplaceAll(s, "%i", u.instance) }

func (u unit) isTemplate() bool {
	return u.def != nil && u.instance == "" && strings.Contains(u.def.name, "@.")
}
