package calendarevent

import (
	"testing"
	"time"
)

// Errors as PVE answers them (pve_verify_calendar_event around the
// crate's parse_complete_line message). Where the crate's parser stops is
// traced from calendar_event.rs: only a bad first weekday, text with no
// day, date or time part, or text left over fail.
func TestVerifyErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"", "invalid calendar event '' - unable to parse calendar event - event is empty"},
		{" \t", "invalid calendar event ' \t' - unable to parse calendar event - event is empty"},
		{"foo", `invalid calendar event 'foo' - unable to parse calendar event at 'foo' - Context("weekday")`},
		{"Daily", `invalid calendar event 'Daily' - unable to parse calendar event at 'Daily' - Context("weekday")`},
		{"every 15 min", `invalid calendar event 'every 15 min' - unable to parse calendar event at 'every' - Context("weekday")`},
		{"mon-fri", `invalid calendar event 'mon-fri' - unable to parse calendar event at '-fri' - Nom(Eof)`},
		{"mon,foo", `invalid calendar event 'mon,foo' - unable to parse calendar event at ',foo' - Nom(Eof)`},
		{"*/0", `invalid calendar event '*/0' - unable to parse calendar event at '/0' - Nom(Eof)`},
		{"*/60", `invalid calendar event '*/60' - unable to parse calendar event at '*/60' - Context("date or time specification")`},
		{"10..5", `invalid calendar event '10..5' - unable to parse calendar event at '10..5' - Context("date or time specification")`},
		{"2020-13-01", `invalid calendar event '2020-13-01' - unable to parse calendar event at '2020-13-01' - Context("date or time specification")`},
		{"sat 25:61", `invalid calendar event 'sat 25:61' - unable to parse calendar event at ':61' - Nom(Eof)`},
		{"UTC", `invalid calendar event 'UTC' - unable to parse calendar event at '' - Context("date or time specification")`},
		{"@daily", `invalid calendar event '@daily' - unable to parse calendar event at '@daily' - Context("date or time specification")`},
		{"4294967296", `invalid calendar event '4294967296' - unable to parse calendar event at '4294967296' - Context("date or time specification")`},
	} {
		err := Verify(c.text)
		if err == nil || err.Error() != c.want {
			t.Errorf("Verify(%q) = %v, want %s", c.text, err, c.want)
		}
	}
}

// What the crate accepts beyond its own tests, with where it fires: the
// grammar's corners (an hour out of range read as minute:second, "*/N"
// restarting every hour, a trimmed text, weekday ranges that wrap).
func TestParseAccepts(t *testing.T) {
	for _, c := range []struct {
		text       string
		last, want int64
	}{
		{" mon..fri 02:30 ", 2 * day, 4*day + 2*hour + 30*min}, // Saturday → Monday 1970-01-05
		{"sat,sun 0/6:00", 0, 2 * day},                         // Saturday 00:00
		{"*/7", 56 * min, hour + 7*min},                        // minutes 0,7,…,56; find_next overshoots to :63, so the crate skips 01:00
		{"*/15", 14*min + 59, 15 * min},                        // the replication default
		{"25:00", 0, 25 * min},                                 // no hour 25: minute 25, second 0
		{"fri..mon 12:00", 2*day + 13*hour, 3*day + 12*hour},   // Sat 13:00 → Sun 12:00
		{"*-*-01 03:00", 4 * hour, 31*day + 3*hour},            // Feb 1st
		{"mon 02:00", 0, 4*day + 2*hour},
		{"12:00:30", 0, 12*hour + 30},
		{"0..23/6:00", 7 * hour, 12 * hour},
	} {
		ev, err := ParseTrimmed(c.text)
		if err != nil {
			t.Errorf("ParseTrimmed(%q): %v", c.text, err)
			continue
		}
		if Verify(c.text) != nil {
			t.Errorf("Verify(%q) refuses what parses", c.text)
		}
		if got, ok := ev.Next(c.last, time.UTC); !ok || got != c.want {
			t.Errorf("%q after %d = %d (%v), want %d", c.text, c.last, got, ok, c.want)
		}
	}
}

// Without "UTC" the event is computed in the zone given (the node's), as
// PVE computes replication schedules in local time.
func TestNextLocalZone(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	ev, err := Parse("02:00")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ev.Next(0, loc); got != hour { // 02:00 CET is 01:00 UTC
		t.Errorf("02:00 in CET = %d, want %d", got, hour)
	}
	ev, _ = Parse("02:00 UTC")
	if got, _ := ev.Next(0, loc); got != 2*hour {
		t.Errorf("02:00 UTC in CET = %d, want %d", got, 2*hour)
	}
}
