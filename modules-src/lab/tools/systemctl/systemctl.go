package systemctl

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
	"github.com/gopve/proxmox/modules-src/lab/tools/statefile"
)

// StateFile and LogFile live under state_dir.
const (
	StateFile = "systemd.json"
	LogFile   = "systemctl.log"
)

// State is the node's unit state; units absent from it are in their vendor state.
type State struct {
	Units map[string]*UnitState `json:"units"`
}

// UnitState is what changed for one unit since "boot".
type UnitState struct {
	Enabled      string         `json:"enabled,omitempty"` // "" = vendor default
	Active       bool           `json:"active"`
	ActiveEnter  time.Time      `json:"active_enter"`
	InvocationID string         `json:"invocation_id"`
	Counts       map[string]int `json:"counts,omitempty"` // start, stop, restart, reload
}

// Tool runs systemctl on one node.
type Tool struct {
	Env  *cli.Env
	Node *nodecfg.Node
	Now  func() time.Time
}

func (t *Tool) libDir() string {
	if t.Node.PVE >= 9 {
		return "/usr/lib/systemd/system"
	}
	return "/lib/systemd/system"
}

func (st *State) unit(u unit, now time.Time) *UnitState {
	if st.Units == nil {
		st.Units = map[string]*UnitState{}
	}
	us, ok := st.Units[u.id]
	if !ok {
		us = &UnitState{Active: u.def != nil && u.def.active && u.instance == "", Counts: map[string]int{}}
		if us.Active {
			us.ActiveEnter = now.Add(-time.Hour).Truncate(time.Second)
			us.InvocationID = newID()
		}
		st.Units[u.id] = us
	}
	if us.Counts == nil {
		us.Counts = map[string]int{}
	}
	return us
}

func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (t *Tool) enabledState(st *State, u unit) string {
	if u.def == nil {
		return ""
	}
	if us, ok := st.Units[u.id]; ok && us.Enabled != "" {
		return us.Enabled
	}
	if u.instance != "" {
		return "disabled"
	}
	return u.def.enabled
}

// Run executes systemctl with env.Args.
func (t *Tool) Run() int {
	opts := map[string]string{}
	var props []string
	var pos []string
	args := t.Env.Args
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-p" || a == "--property":
			if i+1 < len(args) {
				i++
				props = append(props, strings.Split(args[i], ",")...)
			}
		case strings.HasPrefix(a, "--property="):
			props = append(props, strings.Split(strings.TrimPrefix(a, "--property="), ",")...)
		case strings.HasPrefix(a, "-p") && len(a) > 2:
			props = append(props, strings.Split(a[2:], ",")...)
		case strings.HasPrefix(a, "--"):
			k, v, _ := strings.Cut(a[2:], "=")
			opts[k] = v
		case a == "-q":
			opts["quiet"] = ""
		case a == "-a":
			opts["all"] = ""
		case strings.HasPrefix(a, "-") && a != "-":
			opts[a[1:]] = ""
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) == 0 {
		pos = []string{"list-units"}
	}
	verb, names := pos[0], pos[1:]
	_, quiet := opts["quiet"]
	_, now := opts["now"]
	switch verb {
	case "show":
		return t.show(names, props, hasKey(opts, "value"))
	case "is-active":
		return t.isActive(names, quiet)
	case "is-enabled":
		return t.isEnabled(names, quiet)
	case "enable", "disable":
		return t.enable(verb, names, now)
	case "start", "stop", "restart", "reload", "try-restart", "reload-or-restart", "try-reload-or-restart":
		return t.action(verb, names)
	case "daemon-reload", "daemon-reexec":
		t.log(verb, "-", 0)
		return 0
	case "status":
		return t.status(names)
	case "list-unit-files":
		return t.listUnitFiles(names)
	case "list-units":
		return t.listUnits(names, hasKey(opts, "all"))
	case "mask", "unmask":
		return t.Env.Fail(1, "lab systemctl: %s is not simulated", verb)
	}
	return t.Env.Fail(1, "Unknown command verb %s.", verb)
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func (t *Tool) update(fn func(st *State) (bool, error)) error {
	var st State
	return statefile.Update(t.Node.StatePath(StateFile), &st, func() (bool, error) { return fn(&st) })
}

func (t *Tool) log(action, unit string, n int) {
	statefile.AppendLine(t.Node.StatePath(LogFile), fmt.Sprintf("%s %s %s %d", t.Now().UTC().Format(time.RFC3339Nano), action, unit, n))
}

func stamp(ts time.Time) string {
	if ts.IsZero() {
		return ""
	}
	return ts.UTC().Format("Mon 2006-01-02 15:04:05 UTC")
}

func (t *Tool) properties(st *State, u unit) [][2]string {
	now := t.Now()
	if u.def == nil || u.isTemplate() {
		load := "not-found"
		errText := fmt.Sprintf("org.freedesktop.systemd1.NoSuchUnit \"Unit %s not found.\"", u.id)
		if u.isTemplate() {
			load = "bad-setting"
			errText = fmt.Sprintf("org.freedesktop.systemd1.BadUnitSetting \"Unit %s has a bad unit file setting.\"", u.id)
		}
		return [][2]string{{"Id", u.id}, {"Names", u.id}, {"Description", u.id}, {"LoadState", load},
			{"ActiveState", "inactive"}, {"SubState", "dead"}, {"FragmentPath", ""}, {"UnitFileState", ""},
			{"UnitFilePreset", ""}, {"StateChangeTimestampMonotonic", "0"}, {"ActiveEnterTimestampMonotonic", "0"},
			{"CanStart", "no"}, {"CanStop", "no"}, {"CanReload", "no"}, {"LoadError", errText}, {"Result", "success"}}
	}
	us := st.unit(u, now)
	active, sub := "inactive", "dead"
	if us.Active {
		active, sub = "active", "running"
		if strings.HasSuffix(u.id, ".timer") {
			sub = "waiting"
		}
	}
	frag := path.Join(t.libDir(), u.def.name)
	preset := "enabled"
	if u.def.enabled == "static" {
		preset = ""
	}
	if strings.Contains(u.def.name, "@.timer") {
		preset = "enabled"
	}
	mainPID := "0"
	if us.Active && strings.HasSuffix(u.id, ".service") {
		mainPID = fmt.Sprint(1000 + len(u.id)*7)
	}
	p := [][2]string{
		{"Type", map[bool]string{true: "notify", false: ""}[strings.HasSuffix(u.id, ".service")]},
		{"Restart", "no"},
		{"MainPID", mainPID},
		{"NRestarts", "0"},
		{"Id", u.id},
		{"Names", strings.TrimSpace(u.id + " " + aliasOf(u.id))},
		{"Description", u.expand(u.def.description)},
		{"LoadState", "loaded"},
		{"ActiveState", active},
		{"SubState", sub},
		{"FragmentPath", frag},
		{"UnitFileState", t.enabledState(st, u)},
		{"UnitFilePreset", preset},
		{"ActiveEnterTimestamp", stamp(map[bool]time.Time{true: us.ActiveEnter}[us.Active])},
		{"InvocationID", map[bool]string{true: us.InvocationID}[us.Active]},
		{"CanStart", "yes"},
		{"CanStop", "yes"},
		{"CanReload", map[bool]string{true: "yes", false: "no"}[strings.HasSuffix(u.id, ".service") && u.def.enabled != "static"]},
		{"Result", "success"},
	}
	if u.def.wantedBy != "" {
		p = append(p, [2]string{"WantedBy", u.def.wantedBy})
	}
	if u.def.unit != "" {
		p = append(p, [2]string{"Unit", u.expand(u.def.unit)}, [2]string{"TimersCalendar", fmt.Sprintf("{ OnCalendar=%s ; next_elapse=n/a }", u.def.calendar)})
	}
	return p
}

func (t *Tool) show(names, props []string, valueOnly bool) int {
	err := t.update(func(st *State) (bool, error) {
		// Real `systemctl show` changes nothing. The stand-in keeps only
		// what its later answers must repeat: the start time and
		// invocation id it makes up for a unit active since "boot". An
		// inactive unit seen for the first time is not written down, so
		// a check-mode module reading its timers leaves the node as it was.
		remember := false
		for i, n := range names {
			if i > 0 {
				t.Env.Outf("\n")
			}
			u := lookup(n)
			_, known := st.Units[u.id]
			all := t.properties(st, u)
			if us, ok := st.Units[u.id]; ok && !known {
				if us.Active {
					remember = true
				} else {
					delete(st.Units, u.id)
				}
			}
			for _, kv := range all {
				if len(props) > 0 && !slices.Contains(props, kv[0]) {
					continue
				}
				if valueOnly {
					t.Env.Outf("%s\n", kv[1])
				} else {
					t.Env.Outf("%s=%s\n", kv[0], kv[1])
				}
			}
		}
		return remember, nil
	})
	if err != nil {
		return t.Env.Fail(1, "%v", err)
	}
	return 0
}

func (t *Tool) isActive(names []string, quiet bool) int {
	code := 3
	var st State
	statefile.Read(t.Node.StatePath(StateFile), &st)
	for _, n := range names {
		u := lookup(n)
		state := "inactive"
		if u.def != nil && !u.isTemplate() && st.unit(u, t.Now()).Active {
			state, code = "active", 0
		}
		if !quiet {
			t.Env.Outf("%s\n", state)
		}
	}
	return code
}

// enabledLike are the is-enabled answers that exit 0.
var enabledLike = map[string]bool{"enabled": true, "enabled-runtime": true, "static": true, "alias": true, "indirect": true, "generated": true}

func (t *Tool) isEnabled(names []string, quiet bool) int {
	var st State
	statefile.Read(t.Node.StatePath(StateFile), &st)
	code := 1
	for _, n := range names {
		u := lookup(n)
		if u.def == nil {
			return t.Env.Fail(1, "Failed to get unit file state for %s: No such file or directory", u.id)
		}
		s := t.enabledState(&st, u)
		switch {
		case u.isTemplate():
			s = "indirect"
		case u.alias != "":
			s = "alias" // systemd ≥ 247 answers this for Alias= names
		}
		if enabledLike[s] {
			code = 0
		}
		if !quiet {
			t.Env.Outf("%s\n", s)
		}
	}
	return code
}

func (t *Tool) enable(verb string, names []string, now bool) int {
	if len(names) == 0 {
		return t.Env.Fail(1, "Too few arguments.")
	}
	var msgs []string
	err := t.update(func(st *State) (bool, error) {
		for _, n := range names {
			u := lookup(n)
			if u.def == nil {
				//lint:ignore ST1005 systemctl's own message, printed verbatim
				return false, fmt.Errorf("Failed to %s unit: Unit file %s does not exist.", verb, u.id)
			}
			if u.def.enabled == "static" {
				msgs = append(msgs, "The unit files have no installation config (WantedBy=, RequiredBy=, UpheldBy=,\nAlso=, or Alias= settings in the [Install] section, and DefaultInstance= for\ntemplate units). This means they are not meant to be enabled or disabled using systemctl.")
				continue
			}
			us := st.unit(u, t.Now())
			link := path.Join("/etc/systemd/system", u.def.wantedBy+".wants", u.id)
			want := map[string]string{"enable": "enabled", "disable": "disabled"}[verb]
			if t.enabledState(st, u) != want {
				us.Enabled = want
				if verb == "enable" {
					msgs = append(msgs, fmt.Sprintf("Created symlink %s → %s.", link, path.Join(t.libDir(), u.def.name)))
				} else {
					msgs = append(msgs, fmt.Sprintf("Removed \"%s\".", link))
				}
				t.log(verb, u.id, 1)
			}
			if now {
				if verb == "enable" && !us.Active {
					t.transition(u, us, "start")
				} else if verb == "disable" && us.Active {
					t.transition(u, us, "stop")
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return t.Env.Fail(1, "%v", err)
	}
	for _, m := range msgs {
		t.Env.Errf("%s\n", m)
	}
	return 0
}

// transition applies a job to a unit and logs it with its running count.
func (t *Tool) transition(u unit, us *UnitState, job string) {
	us.Counts[job]++
	switch job {
	case "start", "restart":
		us.Active = true
		us.ActiveEnter = t.Now().Truncate(time.Microsecond)
		us.InvocationID = newID()
	case "stop":
		us.Active = false
	}
	t.log(job, u.id, us.Counts[job])
}

func (t *Tool) action(verb string, names []string) int {
	if len(names) == 0 {
		return t.Env.Fail(1, "Too few arguments.")
	}
	err := t.update(func(st *State) (bool, error) {
		for _, n := range names {
			u := lookup(n)
			if u.def == nil || u.isTemplate() {
				what := "not found"
				if verb == "stop" {
					what = "not loaded"
				}
				if u.isTemplate() {
					//lint:ignore ST1005 systemctl's own message, printed verbatim
					return true, fmt.Errorf("Failed to %s %s: Unit name %s is missing the instance name.", verb, u.id, u.id)
				}
				return true, &exit{5, fmt.Sprintf("Failed to %s %s: Unit %s %s.", verbText(verb), u.id, u.id, what)}
			}
			us := st.unit(u, t.Now())
			switch verb {
			case "start":
				if !us.Active {
					t.transition(u, us, "start")
				}
			case "stop":
				if us.Active {
					t.transition(u, us, "stop")
				}
			case "restart", "reload-or-restart":
				t.transition(u, us, "restart")
			case "try-restart", "try-reload-or-restart":
				if us.Active {
					t.transition(u, us, "restart")
				}
			case "reload":
				if !us.Active {
					//lint:ignore ST1005 systemctl's own message, printed verbatim
					return true, fmt.Errorf("Job for %s failed.\nSee \"systemctl status %s\" and \"journalctl -xeu %s\" for details.", u.id, u.id, u.id)
				}
				t.transition(u, us, "reload")
			}
		}
		return true, nil
	})
	if e, ok := err.(*exit); ok {
		return t.Env.Fail(e.code, "%s", e.msg)
	}
	if err != nil {
		return t.Env.Fail(1, "%v", err)
	}
	return 0
}

type exit struct {
	code int
	msg  string
}

func (e *exit) Error() string { return e.msg }

func verbText(v string) string {
	switch v {
	case "reload-or-restart", "try-reload-or-restart":
		return "reload-or-restart"
	}
	return v
}

func (t *Tool) status(names []string) int {
	var st State
	statefile.Read(t.Node.StatePath(StateFile), &st)
	code := 0
	for i, n := range names {
		u := lookup(n)
		if u.def == nil {
			return t.Env.Fail(4, "Unit %s could not be found.", u.id)
		}
		us := st.unit(u, t.Now())
		dot, line := "○", "inactive (dead)"
		if us.Active {
			dot = "●"
			line = fmt.Sprintf("active (running) since %s", stamp(us.ActiveEnter))
		} else {
			code = 3
		}
		if i > 0 {
			t.Env.Outf("\n")
		}
		t.Env.Outf("%s %s - %s\n     Loaded: loaded (%s; %s; preset: enabled)\n     Active: %s\n",
			dot, u.id, u.expand(u.def.description), path.Join(t.libDir(), u.def.name), t.enabledState(&st, u), line)
	}
	return code
}

func (t *Tool) listUnitFiles(patterns []string) int {
	var st State
	statefile.Read(t.Node.StatePath(StateFile), &st)
	type row struct{ name, state, preset string }
	var rows []row
	for _, d := range catalog {
		u := unit{id: d.name, def: &d}
		if !matchAny(patterns, d.name) {
			continue
		}
		s := d.enabled
		preset := "enabled"
		if s == "static" {
			preset = "-"
		}
		rows = append(rows, row{d.name, s, preset})
		_ = u
	}
	for id, us := range st.Units {
		u := lookup(id)
		if u.instance != "" && us.Enabled == "enabled" && matchAny(patterns, id) {
			rows = append(rows, row{id, "enabled", "enabled"})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	if len(rows) == 0 {
		t.Env.Outf("UNIT FILE STATE PRESET\n\n0 unit files listed.\n")
		return 1
	}
	w := len("UNIT FILE")
	for _, r := range rows {
		w = max(w, len(r.name))
	}
	t.Env.Outf("%-*s STATE    PRESET \n", w, "UNIT FILE")
	for _, r := range rows {
		t.Env.Outf("%-*s %-8s %s\n", w, r.name, r.state, r.preset)
	}
	t.Env.Outf("\n%d unit files listed.\n", len(rows))
	return 0
}

func matchAny(patterns []string, name string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok || p == name {
			return true
		}
	}
	return false
}

func (t *Tool) listUnits(patterns []string, all bool) int {
	var st State
	statefile.Read(t.Node.StatePath(StateFile), &st)
	type row struct{ name, active, sub, desc string }
	var rows []row
	ids := map[string]bool{}
	for _, d := range catalog {
		if !strings.Contains(d.name, "@.") {
			ids[d.name] = true
		}
	}
	for id := range st.Units {
		ids[id] = true
	}
	for id := range ids {
		u := lookup(id)
		if u.def == nil || !matchAny(patterns, id) {
			continue
		}
		us := st.unit(u, t.Now())
		if !us.Active && !all {
			continue
		}
		r := row{id, "inactive", "dead", u.expand(u.def.description)}
		if us.Active {
			r.active, r.sub = "active", "running"
			if strings.HasSuffix(id, ".timer") {
				r.sub = "waiting"
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	w := len("UNIT")
	for _, r := range rows {
		w = max(w, len(r.name))
	}
	t.Env.Outf("  %-*s LOAD   ACTIVE   SUB     DESCRIPTION\n", w, "UNIT")
	for _, r := range rows {
		t.Env.Outf("  %-*s loaded %-8s %-7s %s\n", w, r.name, r.active, r.sub, r.desc)
	}
	t.Env.Outf("\nLOAD   = Reflects whether the unit definition was properly loaded.\nACTIVE = The high-level unit activation state, i.e. generalization of SUB.\nSUB    = The low-level unit activation state, values depend on unit type.\n%d loaded units listed.\n", len(rows))
	return 0
}

// aliasOf returns the alias names of a unit ("sshd.service" for ssh.service).
func aliasOf(id string) string {
	var out []string
	for a, target := range aliases {
		if target == id {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
