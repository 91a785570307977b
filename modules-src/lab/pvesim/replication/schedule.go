package replication

import (
	"strconv"
	"strings"
	"time"
)

// ScheduleEvery is the period in minutes of a "*/N" schedule. Other
// calendar events (pve-common CalendarEvent.pm parse_calendar_event) are
// not parsed and count as */15, job_status's default for a job without a
// schedule: a reconstruction.
func ScheduleEvery(schedule string) int {
	if n, err := strconv.Atoi(strings.TrimPrefix(schedule, "*/")); err == nil && strings.HasPrefix(schedule, "*/") && n > 0 {
		return n
	}
	return 15
}

// NextEvent is compute_next_event for schedule on the lab's clock: the
// first multiple of its period, in lab minutes, after last (Unix ms).
func NextEvent(schedule string, lastMs int64, minute time.Duration) int64 {
	m := minute.Milliseconds()
	if m <= 0 {
		m = 1
	}
	n := int64(ScheduleEvery(schedule))
	next := (lastMs/m + 1 + n - 1) / n * n
	return next * m
}
