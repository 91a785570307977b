package replication

import (
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi/calendarevent"
)

// defaultSchedule is job_status's schedule for a job without one
// (ReplicationState.pm: $jobcfg->{schedule} || '*/15').
const defaultSchedule = "*/15"

// NextEvent is job_status's compute_next_event for schedule after last
// (Unix ms), on the lab's clock, in Unix ms; 0 when the event never fires
// again (PVE: `// 0`, not scheduled).
//
// Real: the schedule is parsed and its next event computed as PVE does
// (package calendarevent, a port of proxmox-time), weekdays, dates, hours,
// keywords and all. The lab's minute may be shorter than a real one, so
// its time is mapped to a virtual wall clock on which a lab minute is a
// minute (same epoch), the event computed there, and mapped back: for a
// "*/N" with N dividing 60 this is the same multiple of N lab minutes as
// before. Times are UTC: PVE uses the node's local time, and the lab's
// nodes run in UTC.
//
// Still a reconstruction: a schedule that does not parse (only a config
// written behind the API's back can hold one; PVE's job_status would die
// on it) counts as */15, as the empty schedule does.
func NextEvent(schedule string, lastMs int64, minute time.Duration) int64 {
	m := minute.Milliseconds()
	if m <= 0 {
		m = 1
	}
	if schedule == "" || schedule == "0" { // Perl's ||: "0" is false too
		schedule = defaultSchedule
	}
	ev, err := calendarevent.ParseTrimmed(schedule)
	if err != nil {
		ev, _ = calendarevent.Parse(defaultSchedule)
	}
	// A virtual second is m/60 lab ms; compute_next_event takes whole
	// seconds and returns one strictly later.
	last := floorDiv(lastMs*60, m)
	next, ok := ev.Next(last, time.UTC)
	if !ok {
		return 0
	}
	// Rounded up, so the event stays strictly after lastMs.
	return -floorDiv(-next*m, 60)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}
