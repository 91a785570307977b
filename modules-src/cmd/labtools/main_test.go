package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/tools"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	cmds := map[string]func(){"labtools": func() { os.Exit(run(os.Args)) }}
	for _, n := range tools.Names() {
		cmds[n] = func() { os.Exit(run(os.Args)) }
	}
	testscript.Main(m, cmds)
}

// writeNode writes a node.json for a node whose state lives under dir.
func writeNode(path, node, dir string, extra map[string]any) error {
	n := map[string]any{"node": node, "pve": 9, "state_dir": filepath.Join(dir, "state"), "root": filepath.Join(dir, "root")}
	for k, v := range extra {
		n[k] = v
	}
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func loopWorks() bool {
	if os.Geteuid() != 0 {
		return false
	}
	f, err := os.CreateTemp("", "looptest")
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	f.Truncate(1 << 20)
	f.Close()
	out, err := exec.Command("losetup", "-f", "--show", f.Name()).Output()
	if err != nil {
		return false
	}
	exec.Command("losetup", "-d", strings.TrimSpace(string(out))).Run()
	return true
}

func TestScripts(t *testing.T) {
	loop := loopWorks()
	testenv.Script(t, testscript.Params{
		Dir: "testdata",
		Setup: func(e *testscript.Env) error {
			// The lab's real API simulator, in-process, per script.
			s, err := startSim(e)
			if err != nil {
				return err
			}
			nj := filepath.Join(e.WorkDir, "node.json")
			e.Setenv("GOPVE_LAB_NODE_JSON", nj)
			return writeNode(nj, "pve01", e.WorkDir, simNode(s, e.Getenv("CONTROL"), "pve01"))
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "loop":
				return loop, nil
			case "root":
				return os.Geteuid() == 0, nil
			}
			_, err := exec.LookPath(strings.TrimPrefix(cond, "have:"))
			return err == nil, nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// loopdev FILE VAR: attach FILE to a free loop device, export
			// its path as $VAR and detach it when the script ends.
			"loopdev": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: loopdev FILE VAR")
				}
				out, err := exec.Command("losetup", "-f", "--show", ts.MkAbs(args[0])).Output()
				ts.Check(err)
				dev := strings.TrimSpace(string(out))
				ts.Defer(func() { exec.Command("losetup", "-d", dev).Run() })
				ts.Setenv(args[1], dev)
			},
			// sshd NODEJSON: start a real sshd on a loopback address whose
			// sessions run the stand-in as the node NODEJSON describes;
			// exports $SSHHOST and points $GOPVE_LAB_SSH at an ssh wrapper
			// that uses $WORK's key and known_hosts (host key checking on).
			"sshd": cmdSshd,
			// trusthost: put $SSHHOST's host key into the known_hosts file.
			"trusthost": cmdTrustHost,
			// online NODE 0|1: power a simulated node off or on (C10).
			"online": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: online NODE 0|1")
				}
				ts.Check(ts.Value(simKey{}).(*pvesim.Sim).SetOnline(args[0], args[1] == "1"))
			},
			// finishjoin NODE: the joiner's half of a join (finish_join) after
			// a member's `pvecm addnode NODE`.
			"finishjoin": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: finishjoin NODE")
				}
				_, err := ts.Value(simKey{}).(*pvesim.Sim).FinishJoin(args[0], nil)
				if neg != (err != nil) {
					ts.Fatalf("finishjoin %s: %v", args[0], err)
				}
			},
			// node NAME DIR [key=value...]: write a node.json for another
			// node and point GOPVE_LAB_NODE_JSON at it.
			"node": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 {
					ts.Fatalf("usage: node NAME DIR [key=value...]")
				}
				extra := simNode(ts.Value(simKey{}).(*pvesim.Sim), ts.Getenv("CONTROL"), args[0])
				for _, kv := range args[2:] {
					k, v, _ := strings.Cut(kv, "=")
					if n, err := strconv.Atoi(v); err == nil {
						extra[k] = n
					} else {
						extra[k] = v
					}
				}
				dir := ts.MkAbs(args[1])
				nj := filepath.Join(dir, "node.json")
				ts.Check(os.MkdirAll(dir, 0o755))
				ts.Check(writeNode(nj, args[0], dir, extra))
				ts.Setenv("GOPVE_LAB_NODE_JSON", nj)
			},
		},
	})
}
