// Package tools dispatches the lab's PVE/ZFS command-line stand-ins
// (zpool, zfs, systemctl, update-initramfs, pvecm, pvesm, pvesh, pvesr, qm, pct, ha-manager) by the name
// they were called as. The labtools binary is installed under each name in
// every lab node; see docs/contracts.md, "Lab".
package tools

import (
	"encoding/json"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/apiclient"
	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/control"
	"github.com/gopve/proxmox/modules-src/lab/tools/hamanager"
	"github.com/gopve/proxmox/modules-src/lab/tools/initramfs"
	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
	"github.com/gopve/proxmox/modules-src/lab/tools/perlstartup"
	"github.com/gopve/proxmox/modules-src/lab/tools/pvecm"
	"github.com/gopve/proxmox/modules-src/lab/tools/pvesh"
	"github.com/gopve/proxmox/modules-src/lab/tools/pvesm"
	"github.com/gopve/proxmox/modules-src/lab/tools/pvesr"
	"github.com/gopve/proxmox/modules-src/lab/tools/qm"
	"github.com/gopve/proxmox/modules-src/lab/tools/systemctl"
	"github.com/gopve/proxmox/modules-src/lab/tools/zfs"
)

// commands maps a tool name to its entry point.
var commands = map[string]func(env *cli.Env, node *nodecfg.Node) int{
	"zpool": func(env *cli.Env, node *nodecfg.Node) int {
		return (&zfs.Tool{Env: env, Node: node, Now: time.Now}).Zpool()
	},
	"zfs": func(env *cli.Env, node *nodecfg.Node) int {
		return (&zfs.Tool{Env: env, Node: node, Now: time.Now}).Zfs()
	},
	"systemctl": func(env *cli.Env, node *nodecfg.Node) int {
		return (&systemctl.Tool{Env: env, Node: node, Now: time.Now}).Run()
	},
	"pvecm": func(env *cli.Env, node *nodecfg.Node) int {
		t := &pvecm.Tool{Env: env, Node: node, Cluster: control.New(node.Control), Now: time.Now}
		t.Restart = func(units ...string) {
			quiet := &cli.Env{Args: append([]string{"restart"}, units...), Stdout: io.Discard, Stderr: io.Discard, Getenv: env.Getenv}
			(&systemctl.Tool{Env: quiet, Node: node, Now: time.Now}).Run()
		}
		return t.Run()
	},
	"pvesm": func(env *cli.Env, node *nodecfg.Node) int {
		api, err := apiclient.New(node)
		if err != nil {
			return env.Fail(255, "pvesm: %v", err)
		}
		return (&pvesm.Tool{Env: env, Node: node.Node, API: api}).Run()
	},
	"pvesh": func(env *cli.Env, node *nodecfg.Node) int {
		// Real pvesh loads PVE's Perl API before it does anything: the
		// stand-in costs as much (pvesh.Startup), so a benchmark of local
		// mode through pvesh is honest.
		time.Sleep(pvesh.Startup(node, env.Getenv))
		api, err := apiclient.New(node)
		if err != nil {
			return env.Fail(255, "pvesh: %v", err)
		}
		return (&pvesh.Tool{Env: env, API: api}).Run()
	},
	"ha-manager": func(env *cli.Env, node *nodecfg.Node) int {
		api, err := apiclient.New(node)
		if err != nil {
			return env.Fail(255, "ha-manager: %v", err)
		}
		return (&hamanager.Tool{Env: env, API: api}).Run()
	},
	"pvesr": func(env *cli.Env, node *nodecfg.Node) int {
		api, err := apiclient.New(node)
		if err != nil {
			return env.Fail(255, "pvesr: %v", err)
		}
		return (&pvesr.Tool{Env: env, Node: node.Node, API: api, Control: control.New(node.Control)}).Run()
	},
	"pct": func(env *cli.Env, node *nodecfg.Node) int {
		api, err := apiclient.New(node)
		if err != nil {
			return env.Fail(255, "pct: %v", err)
		}
		return (&qm.Tool{Env: env, Node: node.Node, API: api, CT: true}).Run()
	},
	"qm": func(env *cli.Env, node *nodecfg.Node) int {
		api, err := apiclient.New(node)
		if err != nil {
			return env.Fail(255, "qm: %v", err)
		}
		return (&qm.Tool{Env: env, Node: node.Node, API: api}).Run()
	},
	"update-initramfs": func(env *cli.Env, node *nodecfg.Node) int {
		return (&initramfs.Tool{Env: env, Node: node, Now: time.Now}).Run()
	},
}

// Names lists the tools, sorted (for installing the links).
func Names() []string {
	return slices.Sorted(maps.Keys(commands))
}

// Run runs tool name. It reports whether name is known.
func Run(name string, env *cli.Env) (int, bool) {
	fn, ok := commands[name]
	if !ok {
		return 0, false
	}
	node, err := nodecfg.Load(env.Getenv)
	if err != nil {
		return env.Fail(1, "%s: %v", name, err), true
	}
	logCommand(node, name, env.Args)
	// Real qm, pct, pvecm, pvesm, ha-manager and pvesr compile their part
	// of PVE's Perl first (perlstartup); pvesh waits in its own entry.
	time.Sleep(perlstartup.For(name, node.PerlStartupMS))
	return fn(env, node), true
}

// CommandLog is the file under state_dir where every stand-in records the
// command line it was run with, one JSON array per line ([name, args…]):
// the lab's witness of what a module put on a command line, which any
// user of a real node could read in /proc (a secret must never be there).
// Standard input is not recorded: it is where secrets may go.
const CommandLog = "commands.log"

// logCommand appends the command line to CommandLog. A line is one write
// on an O_APPEND file, so concurrent tools never interleave; a failure to
// log does not change what the tool does.
func logCommand(node *nodecfg.Node, name string, args []string) {
	line, err := json.Marshal(append([]string{name}, args...))
	if err != nil {
		return
	}
	f, err := os.OpenFile(node.StatePath(CommandLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}
