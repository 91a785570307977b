// Package modprobe reads and edits modprobe.d option files such as
// /etc/modprobe.d/zfs.conf ("options zfs zfs_arc_max=4294967296"), keeping
// every line it was not asked to change.
package modprobe

import (
	"strings"
)

// Get returns the value of module's option key as modprobe would see it:
// the last occurrence wins.
func Get(content, module, key string) (value string, found bool) {
	for _, line := range strings.Split(content, "\n") {
		f := optionFields(line, module)
		for _, kv := range f {
			if k, v, ok := strings.Cut(kv, "="); ok && k == key {
				value, found = v, true
			}
		}
	}
	return value, found
}

// Set returns content with module's option key set to value. The first
// "options MODULE" line that carries key is edited in place; the key is
// removed from any later lines (a later duplicate would win and silently
// undo the edit), and a line left with no options is dropped. When no line
// carries the key, a new "options MODULE key=value" line is appended. Comments
// and other modules' lines are kept as they are.
func Set(content, module, key, value string) string {
	lines := strings.Split(content, "\n")
	trailingNL := strings.HasSuffix(content, "\n")
	if trailingNL {
		lines = lines[:len(lines)-1]
	}
	if content == "" {
		lines = nil
	}
	done := false
	out := make([]string, 0, len(lines)+1)
	for _, line := range lines {
		opts := optionFields(line, module)
		if opts == nil || !hasKey(opts, key) {
			out = append(out, line)
			continue
		}
		kept := make([]string, 0, len(opts))
		for _, kv := range opts {
			k, _, _ := strings.Cut(kv, "=")
			if k != key {
				kept = append(kept, kv)
				continue
			}
			if !done {
				kept = append(kept, key+"="+value)
				done = true
			}
		}
		if len(kept) == 0 {
			continue
		}
		out = append(out, "options "+module+" "+strings.Join(kept, " "))
	}
	if !done {
		out = append(out, "options "+module+" "+key+"="+value)
	}
	return strings.Join(out, "\n") + "\n"
}

// optionFields returns the option tokens of an "options MODULE ..." line, or
// nil when the line is something else (comment, other module, other verb).
func optionFields(line, module string) []string {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "options" || f[1] != module {
		return nil
	}
	if len(f) == 2 {
		return []string{}
	}
	return f[2:]
}

func hasKey(opts []string, key string) bool {
	for _, kv := range opts {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}
