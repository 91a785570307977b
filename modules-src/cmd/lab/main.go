// Command lab starts, inspects and stops gopve labs: simulated PVE clusters
// whose nodes answer real SSH on 127.77.S.(10+i) and whose Ansible inventory
// is written to <dir>/inventory.yml.
//
//	lab up [--nodes 3] [--pve 9] [--slot S | --dir D]   start (no-op if already up)
//	lab status [--slot S | --dir D | --all]             what runs, exit 1 if not up
//	lab ssh [--slot S | --dir D] NODE [COMMAND…]        ssh into a node with the lab key
//	lab power [--slot S | --dir D] off|on|reboot NODE   cut, restore or cycle a node's power
//	lab down [--slot S | --dir D]                       stop everything, remove the dir
//
// `lab up` leaves a supervisor process (`lab supervise`) holding the nodes,
// the repositories and the API simulator; `lab down` stops it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/systool"
	"github.com/gopve/proxmox/modules-src/lab/tools"
	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
)

func main() {
	// The lab binary is also the nodes' CLI stand-ins (zpool, pvesm, …) when
	// no labtools binary is at hand: installed in a node under those names,
	// it acts as the tool it is called as.
	if name := filepath.Base(os.Args[0]); name == "labtools" || slices.Contains(tools.Names(), name) {
		os.Exit(runTool(os.Args))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// runTool is labtools's main: `NAME ARGS` under a tool's name, or
// `labtools NAME ARGS`.
func runTool(argv []string) int {
	env := cli.OS()
	name := filepath.Base(argv[0])
	env.Args = argv[1:]
	if name == "labtools" {
		if len(argv) < 2 {
			fmt.Fprintf(os.Stderr, "usage: labtools NAME [ARGS...]\nNAME is one of: %s\n", strings.Join(tools.Names(), ", "))
			return 2
		}
		name, env.Args = argv[1], argv[2:]
	}
	code, ok := tools.Run(name, env)
	if !ok {
		fmt.Fprintf(os.Stderr, "labtools: unknown tool %q\n", name)
		return 2
	}
	return code
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: lab up|down|status|ssh|power|digest [flags]  (lab <command> -h for flags)")
		return 2
	}
	var err error
	switch args[0] {
	case "up":
		err = up(args[1:], stdout)
	case "down":
		err = down(args[1:], stdout)
	case "status":
		var up bool
		up, err = status(args[1:], stdout)
		if err == nil && !up {
			return 1
		}
	case "ssh":
		err = sshCmd(args[1:])
	case "power":
		err = power(args[1:], stdout)
	case "digest":
		err = digest(args[1:], stdout)
	case "supervise":
		err = supervise(args[1:], stdout)
	default:
		err = fmt.Errorf("unknown command %q: use up, down, status, ssh, power or digest", args[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, "lab:", err)
		return 1
	}
	return 0
}

// where is the --slot/--dir pair every command takes.
type where struct {
	slot int
	dir  string
}

func (w *where) flags(fs *flag.FlagSet) {
	fs.IntVar(&w.slot, "slot", 0, "lab slot 1..200 (addresses 127.77.SLOT.*); default: the only lab under "+labctl.BaseDir+", else 1")
	fs.StringVar(&w.dir, "dir", "", "lab directory (default "+labctl.BaseDir+"/lab<slot>)")
}

// newCommand is the flag set of one lab command, with the --slot/--dir
// pair every command takes.
func newCommand(name string) (*flag.FlagSet, *where) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	w := &where{}
	w.flags(fs)
	return fs, w
}

// parse parses a command's arguments and names the lab it is about.
func (w *where) parse(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	return w.resolve()
}

// resolve names the lab a command is about: --dir, --slot, else the only
// lab under BaseDir, else slot 1.
func (w *where) resolve() (string, error) {
	if w.dir != "" {
		return filepath.Abs(w.dir)
	}
	if w.slot == 0 {
		if labs := existingLabs(); len(labs) == 1 {
			return labs[0], nil
		}
		w.slot = 1
	}
	return labctl.DefaultDir(w.slot), nil
}

// resolveForUp is resolve for `lab up`: without --slot or --dir it reuses
// the only running lab, or takes the first free slot, so `lab up` works
// while other labs (tests, colleagues) hold slot 1.
func (w *where) resolveForUp() (string, error) {
	if w.dir != "" || w.slot != 0 {
		return w.resolve()
	}
	if labs := existingLabs(); len(labs) == 1 {
		return labs[0], nil
	}
	for s := 1; s <= labctl.MaxSlot; s++ {
		dir := labctl.DefaultDir(s)
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		if labctl.SlotFree(s) {
			w.slot = s
			return dir, nil
		}
	}
	return "", errors.New("every lab slot is in use")
}

// existingLabs lists the lab directories under BaseDir holding a lab.
func existingLabs() []string {
	matches, _ := filepath.Glob(filepath.Join(labctl.BaseDir, "lab*", labctl.StateFile))
	var dirs []string
	for _, m := range matches {
		dirs = append(dirs, filepath.Dir(m))
	}
	sort.Strings(dirs)
	return dirs
}

func up(args []string, stdout io.Writer) error {
	fs, w := newCommand("lab up")
	nodes := fs.Int("nodes", 3, "number of nodes (pve01…)")
	pve := fs.Int("pve", 9, "PVE major version: 8 (Debian 12) or 9 (Debian 13)")
	toolsBin := fs.String("labtools", "", "CLI stand-ins binary (default: labtools next to this binary, else built from the checkout, else this binary)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long (the first PVE 9 lab builds a Debian root)")
	perlStartup := fs.Bool("perl-startup", true, "stand-ins of qm, pct, pvecm, pvesm, ha-manager and pvesr cost what the real Perl tools cost at start (a reconstruction; $"+labctl.EnvPerlStartup+"=off also turns it off)")
	guestsFile := fs.String("guests", "", `JSON list of guests to start with: [{"node":"pve01","vmid":9000,"template":true,"config":{"scsi0":"local-lvm:8"}}, …]`)
	var t timings
	t.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var guests []labctl.GuestFixture
	if *guestsFile != "" {
		var err error
		if guests, err = labctl.ReadGuestFixtures(*guestsFile); err != nil {
			return err
		}
	}
	addGuests := func(ctx context.Context, dir string) error {
		if len(guests) == 0 {
			return nil
		}
		lines, err := labctl.AddGuests(ctx, dir, guests)
		for _, l := range lines {
			fmt.Fprintln(stdout, "lab up: "+l)
		}
		return err
	}
	dir, err := w.resolveForUp()
	if err != nil {
		return err
	}
	if err := labctl.CheckDir(dir); err != nil {
		return err
	}
	if st, err := labctl.ReadState(dir); err == nil {
		w.slot = st.Slot
		if alive(st.PID) {
			if st.PVE != *pve || len(st.Nodes) != *nodes {
				return fmt.Errorf("%s already runs a lab with %d PVE %d nodes; `lab down --dir %s` first to change it", dir, len(st.Nodes), st.PVE, dir)
			}
			fmt.Fprintf(stdout, "lab already up in %s\n", dir)
			printUsage(stdout, st)
			return addGuests(context.Background(), dir)
		}
		// A lab whose supervisor died: clear what it left and start afresh.
		if err := labctl.Cleanup(dir); err != nil {
			return fmt.Errorf("clearing a dead lab in %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if *toolsBin == "" {
		if *toolsBin, err = labctl.FindLabtools(ctx, dir); err != nil {
			return err
		}
		if *toolsBin == "" {
			*toolsBin = self // built in: see main
		}
	}
	logPath := filepath.Join(dir, "supervisor.log")
	// Read and write: a supervisor that fails removes the lab directory
	// (log included) before it exits, and this descriptor is then the only
	// way left to its last words.
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(self, "supervise", "--dir", dir, "--slot", fmt.Sprint(w.slot),
		"--nodes", fmt.Sprint(*nodes), "--pve", fmt.Sprint(*pve), "--labtools", *toolsBin,
		"--minute", t.minute.String(), "--ha-round", t.haRound.String(), "--statd", t.statd.String(), fmt.Sprintf("--perl-startup=%v", *perlStartup))
	cmd.Stdout, cmd.Stderr = log, log
	// Its own session: the supervisor outlives this command and the terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the lab supervisor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fmt.Fprintf(stdout, "lab: starting %d PVE %d nodes in %s (log: %s)\n", *nodes, *pve, dir, logPath)
	for {
		select {
		case err := <-exited:
			return failedStart(dir, log, fmt.Sprintf("the lab supervisor stopped (%v)", err))
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-exited
			return failedStart(dir, log, fmt.Sprintf("the lab did not come up within %s", *timeout))
		case <-time.After(200 * time.Millisecond):
		}
		if st, err := labctl.ReadState(dir); err == nil && st.PID == cmd.Process.Pid {
			printUsage(stdout, st)
			return addGuests(ctx, dir)
		}
	}
}

// failedStart clears what a failed start left in dir, keeps the
// supervisor's log there for a post-mortem and returns an error carrying
// its tail: the reason, which a bare exit status does not give.
func failedStart(dir string, log *os.File, what string) error {
	var b []byte
	if _, err := log.Seek(0, io.SeekStart); err == nil {
		b, _ = io.ReadAll(log)
	}
	logPath := filepath.Join(dir, "supervisor.log")
	var errs []string
	if err := labctl.Cleanup(dir); err != nil {
		errs = append(errs, "cleaning up: "+err.Error())
	}
	kept := "kept in " + logPath
	if err := os.MkdirAll(dir, 0o700); err != nil {
		kept = "not kept: " + err.Error()
	} else if err := os.WriteFile(logPath, b, 0o600); err != nil {
		kept = "not kept: " + err.Error()
	}
	msg := fmt.Sprintf("%s; its log (%s) ends:\n%s", what, kept, tail(string(b), 40))
	if strings.TrimSpace(string(b)) == "" {
		msg = fmt.Sprintf("%s and logged nothing (log %s)", what, kept)
	}
	if len(errs) > 0 {
		msg += "\n(" + strings.Join(errs, "; ") + ")"
	}
	return errors.New(msg)
}

func printUsage(w io.Writer, st labctl.State) {
	inv := filepath.Join(st.Dir, labctl.InventoryFile)
	fmt.Fprintf(w, "lab up: slot %d, PVE %d, %d nodes\n", st.Slot, st.PVE, len(st.Nodes))
	for _, n := range st.Nodes {
		fmt.Fprintf(w, "  %-6s %s (ssh root, API https://%s:8006)\n", n.Name, n.Addr, n.Addr)
	}
	fmt.Fprintf(w, "inventory:   %s\ncredentials: %s\n", inv, filepath.Join(st.Dir, labctl.CredentialsFile))
	fmt.Fprintf(w, "try:         ansible -i %s all -m ping\n", inv)
	fmt.Fprintf(w, "             lab ssh --dir %s pve01 pveversion\n", st.Dir)
	fmt.Fprintf(w, "stop:        lab down --dir %s\n", st.Dir)
}

func supervise(args []string, stdout io.Writer) error {
	fs, w := newCommand("lab supervise")
	nodes := fs.Int("nodes", 3, "")
	pve := fs.Int("pve", 9, "")
	tools := fs.String("labtools", "", "")
	perlStartup := fs.Bool("perl-startup", true, "")
	var t timings
	t.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	lab, err := labctl.Start(ctx, labctl.Options{Nodes: *nodes, PVE: *pve, Slot: w.slot, Dir: w.dir,
		Labtools: *tools, Log: stdout, SimConfig: t.apply, NoPerlStartup: !*perlStartup})
	if err != nil {
		return err
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "lab: stopping")
	return lab.Close()
}

func down(args []string, stdout io.Writer) error {
	fs, w := newCommand("lab down")
	dir, err := w.parse(fs, args)
	if err != nil {
		return err
	}
	st, err := labctl.ReadState(dir)
	if err == nil && alive(st.PID) {
		_ = syscall.Kill(st.PID, syscall.SIGTERM)
		deadline := time.Now().Add(60 * time.Second)
		for alive(st.PID) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(st.PID) {
			_ = syscall.Kill(st.PID, syscall.SIGKILL)
		}
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stdout, "lab down: %s is gone\n", dir)
		return nil
	}
	if err := labctl.Cleanup(dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "lab down: %s is gone\n", dir)
	return nil
}

func status(args []string, stdout io.Writer) (bool, error) {
	fs, w := newCommand("lab status")
	all := fs.Bool("all", false, "every lab under "+labctl.BaseDir)
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	var dirs []string
	if *all {
		dirs = existingLabs()
	} else {
		dir, err := w.resolve()
		if err != nil {
			return false, err
		}
		dirs = []string{dir}
	}
	anyUp := false
	for _, dir := range dirs {
		st, err := labctl.ReadState(dir)
		if err != nil {
			fmt.Fprintf(stdout, "%s: no lab\n", dir)
			continue
		}
		state := "up"
		if !alive(st.PID) {
			state = "dead (supervisor gone; `lab down` cleans up)"
		} else {
			anyUp = true
		}
		fmt.Fprintf(stdout, "%s: slot %d, PVE %d, %s, supervisor pid %d, since %s\n", dir, st.Slot, st.PVE, state, st.PID, st.Started.Format(time.RFC3339))
		var powered map[string]bool
		if alive(st.PID) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			powered, _ = labctl.PowerStatesRemote(ctx, dir)
			cancel()
		}
		for _, n := range st.Nodes {
			if on, known := powered[n.Name]; known && !on {
				// A dead node's port never answers: no dial to wait for.
				fmt.Fprintf(stdout, "  %-6s %-15s powered off\n", n.Name, n.Addr)
				continue
			}
			fmt.Fprintf(stdout, "  %-6s %-15s ssh %s\n", n.Name, n.Addr, portState(n.Addr, "22"))
		}
	}
	return anyUp, nil
}

func sshCmd(args []string) error {
	fs, w := newCommand("lab ssh")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return errors.New("usage: lab ssh [--slot S | --dir D] NODE [COMMAND…]")
	}
	dir, err := w.resolve()
	if err != nil {
		return err
	}
	st, err := labctl.ReadState(dir)
	if err != nil {
		return err
	}
	for _, n := range st.Nodes {
		if n.Name == fs.Arg(0) {
			argv := []string{"ssh", "-i", filepath.Join(dir, labctl.KeyFile),
				"-o", "UserKnownHostsFile=" + filepath.Join(dir, labctl.KnownHostsFile),
				"-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes",
				"root@" + n.Addr}
			argv = append(argv, fs.Args()[1:]...)
			path, err := systool.Path("ssh")
			if err != nil {
				return err
			}
			return syscall.Exec(path, argv, os.Environ())
		}
	}
	return fmt.Errorf("the lab in %s has no node %q", dir, fs.Arg(0))
}

// power asks the process holding the lab (supervisor or test) to cut,
// restore or cycle a node's power.
func power(args []string, stdout io.Writer) error {
	fs, w := newCommand("lab power")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("usage: lab power [--slot S | --dir D] off|on|reboot NODE")
	}
	action, name := fs.Arg(0), fs.Arg(1)
	switch action {
	case labctl.PowerActionOff, labctl.PowerActionOn, labctl.PowerActionReboot:
	default:
		return fmt.Errorf("unknown power action %q: use off, on or reboot", action)
	}
	dir, err := w.resolve()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := labctl.PowerRemote(ctx, dir, name, action)
	if err != nil {
		return err
	}
	switch {
	case action == labctl.PowerActionReboot && !rep.WasOn:
		fmt.Fprintf(stdout, "lab power: %s was off; powered on\n", name)
	case action == labctl.PowerActionReboot:
		fmt.Fprintf(stdout, "lab power: %s rebooted\n", name)
	case rep.WasOn == rep.On:
		fmt.Fprintf(stdout, "lab power: %s is already %s\n", name, action)
	default:
		fmt.Fprintf(stdout, "lab power: %s powered %s\n", name, action)
	}
	return nil
}

// digest prints what the named nodes (all without a name) ever wrote, one
// sorted "node:/path type mode owner hash" line per entry, without what
// changes on every login or task (labctl.NotState): diff two of them to
// see what a run changed. pvestatd is settled first.
func digest(args []string, stdout io.Writer) error {
	fs, w := newCommand("lab digest")
	dir, err := w.parse(fs, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := labctl.DigestRemote(ctx, dir, fs.Args()...)
	if err != nil {
		return err
	}
	for _, l := range labctl.DigestLines(d) {
		fmt.Fprintln(stdout, l)
	}
	return nil
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie or a recycled pid is not our supervisor.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
		return false
	}
	return true
}

func portState(host, port string) string {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 500*time.Millisecond)
	if err != nil {
		return "down"
	}
	c.Close()
	return "up"
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// timings are the simulator's guest clocks `lab up` may shorten, so that a
// demo waits for replication and the HA manager in seconds: PVE's own are
// the defaults (0 keeps them).
type timings struct{ minute, haRound, statd time.Duration }

func (t *timings) flags(fs *flag.FlagSet) {
	fs.DurationVar(&t.minute, "minute", 0, "the lab's minute for replication schedules and pvesr runs (default: a minute, as PVE)")
	fs.DurationVar(&t.haRound, "ha-round", 0, "one round of the HA manager, how long it takes to act on a request (default: 10s, as PVE)")
	fs.DurationVar(&t.statd, "statd", 0, "one pvestatd cycle, how often each node activates its storages (default: 10s, as PVE)")
}

func (t timings) apply(c *pvesim.Config) {
	if t.minute > 0 {
		c.ReplicationInterval = t.minute
	}
	if t.haRound > 0 {
		c.HADelay = t.haRound
	}
	if t.statd > 0 {
		c.StatdInterval = t.statd
	}
}
