package calendarevent

import "time"

// contains is DateTimeValue::contains.
func (v value) contains(n int) bool {
	switch v.kind {
	case single:
		return n == v.start
	case rangeOf:
		return n >= v.start && n <= v.end
	}
	if n < v.start {
		return false
	}
	if v.step == 0 {
		return n == v.start
	}
	return (n-v.start)%v.step == 0 && (v.kind == repeated || n <= v.end)
}

func listContains(list []value, n int) bool {
	for _, v := range list {
		if v.contains(n) {
			return true
		}
	}
	return false
}

// findNext is DateTimeValue::find_next: the smallest value of the list
// above n, if any.
func findNext(list []value, n int) (int, bool) {
	best, found := 0, false
	set := func(c int) {
		if !found || c < best {
			best, found = c, true
		}
	}
	for _, v := range list {
		switch {
		case v.kind == single:
			if v.start > n {
				set(v.start)
			}
		case v.kind == rangeOf:
			if n < v.start {
				set(v.start)
			} else if n+1 >= v.start && n+1 <= v.end {
				set(n + 1)
			}
		case n < v.start:
			set(v.start)
		case v.step > 0:
			c := v.start + (n-v.start+v.step)/v.step*v.step
			if v.kind == repeated || c <= v.end {
				set(c)
			}
		}
	}
	return best, found
}

// tm is the crate's TmEditor: broken-down time that every change
// normalises (timegm/timelocal there, time.Date here), so setting minute
// 60 or day 32 rolls over into the next hour or month.
type tm struct {
	y, mo, d, h, mi, s int
	loc                *time.Location
}

func (t *tm) set(y, mo, d, h, mi, s int) {
	n := time.Date(y, time.Month(mo), d, h, mi, s, 0, t.loc)
	t.y, t.mo, t.d = n.Year(), int(n.Month()), n.Day()
	t.h, t.mi, t.s = n.Hour(), n.Minute(), n.Second()
}

func (t *tm) time() time.Time {
	return time.Date(t.y, time.Month(t.mo), t.d, t.h, t.mi, t.s, 0, t.loc)
}

// Each add resets the smaller fields to their minimum, as TmEditor does.
func (t *tm) addYears(n int)  { t.set(t.y+n, 1, 1, 0, 0, 0) }
func (t *tm) addMonths(n int) { t.set(t.y, t.mo+n, 1, 0, 0, 0) }
func (t *tm) addDays(n int)   { t.set(t.y, t.mo, t.d+n, 0, 0, 0) }

// dayNum is the crate's day_num: Monday 0 … Sunday 6.
func (t *tm) dayNum() int { return (int(t.time().Weekday()) + 6) % 7 }

// Next is compute_next_event: the first second strictly after last (Unix
// seconds) at which the event fires, ok false when there is none (a year
// in the past, "02-30"). The crate gives up after 1000 steps and so does
// this. An event written with "UTC" is computed in UTC; any other in loc,
// the zone of the node — PVE's replication and backup jobs run in the
// node's local time.
func (e *Event) Next(last int64, loc *time.Location) (int64, bool) {
	if e.utc || loc == nil {
		loc = time.UTC
	}
	start := time.Unix(last+1, 0).In(loc)
	t := &tm{loc: loc}
	t.set(start.Year(), int(start.Month()), start.Day(), start.Hour(), start.Minute(), start.Second())
	allDays := e.days == 0 || e.days == allDays

	for count := 0; count <= 1000; count++ {
		if len(e.year) > 0 && !listContains(e.year, t.y) {
			n, ok := findNext(e.year, t.y)
			if !ok {
				return 0, false
			}
			t.addYears(n - t.y)
			continue
		}
		if len(e.month) > 0 && !listContains(e.month, t.mo) {
			if n, ok := findNext(e.month, t.mo); ok {
				t.addMonths(n - t.mo)
			} else {
				t.addYears(1)
			}
			continue
		}
		if len(e.day) > 0 && !listContains(e.day, t.d) {
			if n, ok := findNext(e.day, t.d); ok {
				t.addDays(n - t.d)
			} else {
				t.addMonths(1)
			}
			continue
		}
		if !allDays {
			dn := t.dayNum()
			if e.days&(1<<dn) == 0 {
				next := 7 // next week's Monday
				for d := dn + 1; d < 7; d++ {
					if e.days&(1<<d) != 0 {
						next = d
						break
					}
				}
				t.addDays(next - dn)
				continue
			}
		}
		if len(e.hour) > 0 && !listContains(e.hour, t.h) {
			if n, ok := findNext(e.hour, t.h); ok {
				t.set(t.y, t.mo, t.d, n, 0, 0)
			} else {
				t.addDays(1)
			}
			continue
		}
		if len(e.minute) > 0 && !listContains(e.minute, t.mi) {
			if n, ok := findNext(e.minute, t.mi); ok {
				t.set(t.y, t.mo, t.d, t.h, n, 0)
			} else {
				t.set(t.y, t.mo, t.d, t.h+1, 0, 0)
			}
			continue
		}
		if len(e.second) > 0 && !listContains(e.second, t.s) {
			if n, ok := findNext(e.second, t.s); ok {
				t.set(t.y, t.mo, t.d, t.h, t.mi, n)
			} else {
				t.set(t.y, t.mo, t.d, t.h, t.mi+1, 0)
			}
			continue
		}
		return t.time().Unix(), true
	}
	return 0, false
}
