package systemctl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// Entry is one line of systemctl.log.
type Entry struct {
	Time  time.Time
	Job   string // start, stop, restart, reload, enable, disable, daemon-reload
	Unit  string // "-" for daemon-reload
	Count int    // how many times this job ran for this unit, this one included
}

// ReadLog parses state_dir/systemctl.log (missing file: no entries), so
// tests can assert e.g. that pveproxy was restarted exactly once (B3).
func ReadLog(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: want 4 fields, got %q", path, i+1, l)
		}
		ts, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		n, err := strconv.Atoi(f[3])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		out = append(out, Entry{Time: ts, Job: f[1], Unit: f[2], Count: n})
	}
	return out, nil
}

// Count returns how many times job ran for unit ("pveproxy" means pveproxy.service).
func Count(entries []Entry, job, unit string) int {
	unit = normalize(unit)
	n := 0
	for _, e := range entries {
		if e.Job == job && e.Unit == unit {
			n++
		}
	}
	return n
}
