// Package calendarevent is PVE's calendar event (format
// "pve-calendar-event": replication, backup and job schedules) as PVE 8/9
// implement it: PVE::CalendarEvent hands the text, trimmed, to the Rust
// crate proxmox-time (proxmox/proxmox-rs, proxmox-time/src:
// calendar_event.rs, date_time_value.rs, parse_helpers.rs, week_days.rs).
// Parse accepts exactly what the crate accepts and fails with the crate's
// own message; Event.Next is its compute_next_event.
//
// It lives under pveapi, with only the standard library, because both the
// modules (pveformat, which must never import the lab) and the lab
// (pveschema, pvesim/replication) check and compute the same events.
package calendarevent

import (
	"fmt"
	"strconv"
	"strings"
)

// value is DateTimeValue: a single number, a range a..b, or a repetition
// start/step, optionally bounded (a..b/step). A field's list of values
// matches when one of them does; an empty list matches everything ("*").
type value struct {
	start, end, step int
	kind             valueKind
}

type valueKind int

const (
	single valueKind = iota
	rangeOf
	repeated      // start/step, no end
	repeatedRange // start..end/step
)

// Event is a parsed calendar event (the crate's CalendarEvent).
type Event struct {
	utc    bool // the text ended in "UTC": computed in UTC whatever the zone
	days   uint8
	second []value
	minute []value
	hour   []value
	day    []value
	month  []value
	year   []value
}

// Week days as the crate's WeekDays bits: Monday is bit 0.
const (
	monday  = 1 << 0
	sunday  = 1 << 6
	allDays = 1<<7 - 1
)

// parseError is a failure the crate reports as "unable to parse calendar
// event at '<rest>' - <kind>", kind being nom's VerboseErrorKind printed
// with {:?} (Context("weekday"), Nom(Eof)).
type parseError struct{ at, kind string }

func (e *parseError) Error() string {
	return fmt.Sprintf("unable to parse calendar event at '%s' - %s", e.at, e.kind)
}

var zero = []value{{kind: single}}

// keywords are the crate's shorthands; the text must be exactly one of
// them (case-sensitive), with an optional " UTC".
var keywords = map[string]Event{
	"minutely":      {second: zero},
	"hourly":        {minute: zero, second: zero},
	"daily":         {hour: zero, minute: zero, second: zero},
	"weekly":        {hour: zero, minute: zero, second: zero, days: monday},
	"monthly":       {hour: zero, minute: zero, second: zero, day: singles(1)},
	"yearly":        {hour: zero, minute: zero, second: zero, day: singles(1), month: singles(1)},
	"annually":      {hour: zero, minute: zero, second: zero, day: singles(1), month: singles(1)},
	"quarterly":     {hour: zero, minute: zero, second: zero, day: singles(1), month: singles(1, 4, 7, 10)},
	"semiannually":  {hour: zero, minute: zero, second: zero, day: singles(1), month: singles(1, 7)},
	"semi-annually": {hour: zero, minute: zero, second: zero, day: singles(1), month: singles(1, 7)},
}

func singles(v ...int) []value {
	out := make([]value, len(v))
	for i, n := range v {
		out[i] = value{start: n, kind: single}
	}
	return out
}

// Parse is proxmox-time's CalendarEvent::from_str (parse_complete_line over
// parse_calendar_event_incomplete). It does not trim: PVE::CalendarEvent
// does that first (see Verify). The crate's parser is nom with only
// recoverable errors, so every optional part that fails just consumes
// nothing; an error can only come from a bad first weekday, from text with
// no day, date or time part, or from text left over at the end.
func Parse(text string) (*Event, error) {
	ev := Event{}
	i := text
	if n, ok := strings.CutSuffix(i, "UTC"); ok {
		ev.utc = true
		i = strings.TrimRight(n, " ")
	}
	hasDays, hasDate, hasTime := false, false, false

	if i != "" && isAlpha(i[0]) {
		if k, ok := keywords[i]; ok {
			k.utc = ev.utc
			return &k, nil
		}
		days, rest, err := weekdayList(i)
		if err != nil {
			return nil, err
		}
		ev.days, hasDays = days, true
		i = space0(rest)
	}

	if year, month, day, rest, ok := dateSpec(i); ok {
		ev.year, ev.month, ev.day, hasDate = year, month, day, true
		i = space0(rest)
	}

	if hour, minute, second, rest, ok := timeSpec(i); ok {
		ev.hour, ev.minute, ev.second, hasTime = hour, minute, second, true
		i = rest
	} else {
		ev.hour, ev.minute, ev.second = zero, zero, zero
	}

	if !hasDays && !hasDate && !hasTime {
		return nil, &parseError{at: i, kind: `Context("date or time specification")`}
	}
	if i != "" { // all_consuming
		return nil, &parseError{at: i, kind: "Nom(Eof)"}
	}
	return &ev, nil
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// space0 is nom's space0: spaces and tabs.
func space0(s string) string { return strings.TrimLeft(s, " \t") }

var weekdayNames = map[string]uint8{
	"monday": 1 << 0, "mon": 1 << 0,
	"tuesday": 1 << 1, "tue": 1 << 1,
	"wednesday": 1 << 2, "wed": 1 << 2,
	"thursday": 1 << 3, "thu": 1 << 3,
	"friday": 1 << 4, "fri": 1 << 4,
	"saturday": 1 << 5, "sat": 1 << 5,
	"sunday": 1 << 6, "sun": 1 << 6,
}

// weekday is parse_weekday: a run of letters naming a day, any case. On
// failure it returns the run itself, where the crate reports the error.
func weekday(s string) (uint8, string, string, bool) {
	n := 0
	for n < len(s) && isAlpha(s[n]) {
		n++
	}
	d, ok := weekdayNames[strings.ToLower(s[:n])]
	return d, s[n:], s[:n], ok && n > 0
}

// weekdayRange is parse_weekdays_range: a day or day..day; a range whose
// end comes before its start wraps over Sunday (fri..mon). A ".." not
// followed by a day is not part of it.
func weekdayRange(s string) (uint8, string, string, bool) {
	start, rest, word, ok := weekday(s)
	if !ok {
		return 0, s, word, false
	}
	if after, found := strings.CutPrefix(rest, ".."); found {
		if end, r, _, ok := weekday(after); ok {
			if start > end {
				return bitsFrom(start, sunday) | bitsFrom(monday, end), r, "", true
			}
			return bitsFrom(start, end), r, "", true
		}
	}
	return start, rest, "", true
}

func bitsFrom(start, end uint8) uint8 {
	var res uint8
	for pos := start; ; pos <<= 1 {
		res |= pos
		if pos >= end {
			return res
		}
	}
}

// weekdayList is separated_list1(tag(","), parse_weekdays_range): only a
// bad first day is an error, a bad later one ends the list before its
// comma.
func weekdayList(s string) (uint8, string, error) {
	days, rest, word, ok := weekdayRange(s)
	if !ok {
		return 0, "", &parseError{at: word, kind: `Context("weekday")`}
	}
	for {
		after, found := strings.CutPrefix(rest, ",")
		if !found {
			return days, rest, nil
		}
		d, r, _, ok := weekdayRange(after)
		if !ok {
			return days, rest, nil
		}
		days, rest = days|d, r
	}
}

// number is parse_time_comp: digits (a u32) below max.
func number(s string, max int) (int, string, bool) {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	if n == 0 {
		return 0, s, false
	}
	v, err := strconv.ParseUint(s[:n], 10, 32)
	if err != nil || v >= uint64(max) {
		return 0, s, false
	}
	return int(v), s[n:], true
}

// component is parse_date_time_comp: N, N..M, N/R or N..M/R. A "/" that
// is not followed by a valid number fails the whole component, as in the
// crate.
func component(s string, max int) (value, string, bool) {
	v, rest, ok := number(s, max)
	if !ok {
		return value{}, s, false
	}
	if after, found := strings.CutPrefix(rest, ".."); found {
		if end, r, ok := number(after, max); ok {
			if v > end {
				return value{}, s, false // "range start is bigger than end"
			}
			if after, found := strings.CutPrefix(r, "/"); found {
				step, r, ok := number(after, max)
				return value{start: v, end: end, step: step, kind: repeatedRange}, r, ok
			}
			return value{start: v, end: end, kind: rangeOf}, r, true
		}
	}
	if after, found := strings.CutPrefix(rest, "/"); found {
		step, r, ok := number(after, max)
		return value{start: v, step: step, kind: repeated}, r, ok
	}
	return value{start: v, kind: single}, rest, true
}

// componentList is parse_date_time_comp_list: "*" (everything, an empty
// list), "*/R" with R > 0 (start, start+R, …), or a comma list of
// components. "*/0" is "*" followed by an unparsed "/0"; "*/" with a bad
// number fails.
func componentList(s string, start, max int) ([]value, string, bool) {
	if rest, found := strings.CutPrefix(s, "*"); found {
		if after, found := strings.CutPrefix(rest, "/"); found {
			step, r, ok := number(after, max)
			if !ok {
				return nil, s, false
			}
			if step > 0 {
				return []value{{start: start, step: step, kind: repeated}}, r, true
			}
		}
		return []value{}, rest, true
	}
	v, rest, ok := component(s, max)
	if !ok {
		return nil, s, false
	}
	list := []value{v}
	for {
		after, found := strings.CutPrefix(rest, ",")
		if !found {
			return list, rest, true
		}
		v, r, ok := component(after, max)
		if !ok {
			return list, rest, true
		}
		list, rest = append(list, v), r
	}
}

// timeSpec is parse_time_spec: [hours:]minutes[:seconds]; no hours means
// every hour, no seconds means second 0.
func timeSpec(s string) (hour, minute, second []value, rest string, ok bool) {
	rest = s
	if h, r, ok := componentList(rest, 0, 24); ok {
		if after, found := strings.CutPrefix(r, ":"); found {
			hour, rest = h, after
		}
	}
	if hour == nil {
		hour = []value{}
	}
	minute, rest, ok = componentList(rest, 0, 60)
	if !ok {
		return nil, nil, nil, s, false
	}
	second = zero
	if after, found := strings.CutPrefix(rest, ":"); found {
		if sec, r, ok := componentList(after, 0, 60); ok {
			second, rest = sec, r
		}
	}
	return hour, minute, second, rest, true
}

// dateSpec is parse_date_spec: YEAR-MONTH-DAY, else MONTH-DAY; years stop
// below 2200 as systemd's do.
func dateSpec(s string) (year, month, day []value, rest string, ok bool) {
	if y, r, ok := componentList(s, 0, 2200); ok {
		if m, r, ok := dashList(r, 1, 13); ok {
			if d, r, ok := dashList(r, 1, 32); ok {
				return y, m, d, r, true
			}
		}
	}
	if m, r, ok := componentList(s, 1, 13); ok {
		if d, r, ok := dashList(r, 1, 32); ok {
			return []value{}, m, d, r, true
		}
	}
	return nil, nil, nil, s, false
}

func dashList(s string, start, max int) ([]value, string, bool) {
	after, found := strings.CutPrefix(s, "-")
	if !found {
		return nil, s, false
	}
	return componentList(after, start, max)
}

// Verify is pve_verify_calendar_event (pve-common PVE/CalendarEvent.pm)
// and what the API answers for a bad value of format pve-calendar-event:
// the text trimmed of white space, refused when empty, parsed by the
// crate; the error names the text as given.
func Verify(text string) error {
	if _, err := ParseTrimmed(text); err != nil {
		return fmt.Errorf("invalid calendar event '%s' - %v", text, err)
	}
	return nil
}

// ParseTrimmed is PVE::CalendarEvent::parse_calendar_event: Perl's trim
// (\s at both ends), an empty event refused, then the crate's parser.
func ParseTrimmed(text string) (*Event, error) {
	t := strings.Trim(text, " \t\n\r\f\v")
	if t == "" {
		return nil, fmt.Errorf("unable to parse calendar event - event is empty")
	}
	return Parse(t)
}
