package calendarevent

import (
	"testing"
	"time"
)

// The vectors below are proxmox-time's own tests, ported as tables:
// proxmox/proxmox-rs, proxmox-time/src/test.rs (test_compute_next_event,
// test_calendar_event_weekday), at commit f3305009a212. The crate runs
// every case with " UTC" appended; so do these.

const (
	min  = 60
	hour = 3600
	day  = 24 * hour

	thursday0000 = 0                 // 1970-01-01 was a Thursday
	thursday1500 = 15 * hour         // make_test_time(0, 15, 0)
	jul31_2020   = int64(1596153600) // Friday, 2020-07-31 00:00:00
	dec31_2020   = int64(1609372800) // Thursday, 2020-12-31 00:00:00
)

func TestComputeNextEventCrateVectors(t *testing.T) {
	for _, c := range []struct {
		event      string
		last, want int64
	}{
		// minute only syntax
		{"0", thursday0000, thursday0000 + hour},
		{"*", thursday0000, thursday0000 + min},
		{"*:0", thursday0000, thursday0000 + hour},
		{"*:*", thursday0000, thursday0000 + min},
		{"*:*:*", thursday0000, thursday0000 + 1},
		{"*:3:5", thursday0000, thursday0000 + 3*min + 5},
		{"mon *:*", thursday0000, thursday0000 + 4*day},
		{"mon 2:*", thursday0000, thursday0000 + 4*day + 2*hour},
		{"mon 2:50", thursday0000, thursday0000 + 4*day + 2*hour + 50*min},
		{"tue", thursday0000, thursday0000 + 5*day},
		{"wed", thursday0000, thursday0000 + 6*day},
		{"thu", thursday0000, thursday0000 + 7*day},
		{"fri", thursday0000, thursday0000 + 1*day},
		{"sat", thursday0000, thursday0000 + 2*day},
		{"sun", thursday0000, thursday0000 + 3*day},
		// repeated ranges
		{"4..10/2:0", thursday0000, thursday0000 + 4*hour},
		{"4..10/2:0", thursday0000 + 5*hour, thursday0000 + 6*hour},
		{"4..10/2:0", thursday0000 + 11*hour, thursday0000 + 1*day + 4*hour},
		// several values for one field, in any order
		{"5,10:4,8", thursday0000, thursday0000 + 5*hour + 4*min},
		{"10,5:8,4", thursday0000, thursday0000 + 5*hour + 4*min},
		{"6,4..10:23,5/5", thursday0000, thursday0000 + 4*hour + 5*min},
		{"4..10,6:5/5,23", thursday0000, thursday0000 + 4*hour + 5*min},
		// month wrapping
		{"sat", jul31_2020, jul31_2020 + 1*day},
		{"sun", jul31_2020, jul31_2020 + 2*day},
		{"mon", jul31_2020, jul31_2020 + 3*day},
		{"tue", jul31_2020, jul31_2020 + 4*day},
		{"wed", jul31_2020, jul31_2020 + 5*day},
		{"thu", jul31_2020, jul31_2020 + 6*day},
		{"fri", jul31_2020, jul31_2020 + 7*day},
		// year wrapping
		{"fri", dec31_2020, dec31_2020 + 1*day},
		{"sat", dec31_2020, dec31_2020 + 2*day},
		{"sun", dec31_2020, dec31_2020 + 3*day},
		{"mon", dec31_2020, dec31_2020 + 4*day},
		{"tue", dec31_2020, dec31_2020 + 5*day},
		{"wed", dec31_2020, dec31_2020 + 6*day},
		{"thu", dec31_2020, dec31_2020 + 7*day},
		{"daily", thursday0000, thursday0000 + day},
		{"daily", thursday0000 + 1, thursday0000 + day},
		// chained: each next from the previous result
		{"5/2:0", thursday0000, thursday0000 + 5*hour},
		{"5/2:0", thursday0000 + 5*hour, thursday0000 + 7*hour},
		{"5/2:0", thursday0000 + 7*hour, thursday0000 + 9*hour},
		{"5/2:0", thursday0000 + 9*hour, thursday0000 + 11*hour},
		// dates
		{"2020-07-31", 0, jul31_2020},
		{"02-28", 0, (31 + 27) * day},
		{"02-29", 0, 2*365*day + (31+28)*day}, // 1972-02-29
		{"1965/5-01-01", -1, thursday0000},
		{"2020-7..9-2/2", jul31_2020, jul31_2020 + 2*day},
		{"2020,2021-12-31", jul31_2020, dec31_2020},
		// keyword shortcuts
		{"minutely", thursday0000, thursday0000 + min},
		{"hourly", thursday0000, thursday0000 + hour},
		{"weekly", thursday0000, thursday0000 + 4*day},
		{"monthly", 0, 31 * day},
		{"quarterly", 0, (31 + 28 + 31) * day},
		{"semiannually", 0, (31 + 28 + 31 + 30 + 31 + 30) * day},
		{"semi-annually", 0, (31 + 28 + 31 + 30 + 31 + 30) * day},
		{"yearly", 0, 365 * day},
		{"annually", 0, 365 * day},
	} {
		checkNext(t, c.event+" UTC", c.last, c.want)
	}

	// The crate's loops: 99 steps of "*:*", "*:0" and "1:0", each from the
	// previous event.
	for _, c := range []struct {
		event       string
		first, step int64
	}{
		{"*:*", thursday0000, min},
		{"*:0", thursday0000, hour},
		{"1:0", thursday1500, day},
	} {
		n := c.first
		for i := int64(1); i < 100; i++ {
			want := thursday0000 + i*c.step
			if c.event == "1:0" {
				want += hour
			}
			checkNext(t, c.event+" UTC", n, want)
			n = want
		}
	}
}

func checkNext(t *testing.T, event string, last, want int64) {
	t.Helper()
	ev, err := Parse(event)
	if err != nil {
		t.Errorf("Parse(%q): %v", event, err)
		return
	}
	got, ok := ev.Next(last, time.UTC)
	if !ok || got != want {
		t.Errorf("%q after %d = %d (%v), want %d (%s)", event, last, got, ok, want, time.Unix(want, 0).UTC())
	}
}

// test_never: events that parse but never fire.
func TestComputeNextEventNever(t *testing.T) {
	for _, s := range []string{"2021-02-29", "02-30"} {
		ev, err := Parse(s + " UTC")
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if got, ok := ev.Next(0, time.UTC); ok {
			t.Errorf("%q fired at %d, want never", s, got)
		}
	}
}

// test_calendar_event_weekday: every spelling the crate accepts.
func TestCalendarEventWeekday(t *testing.T) {
	for _, s := range []string{
		"mon,wed..fri", "fri..mon", "mon", "MON", "monDay", "tue", "Tuesday",
		"wed", "wednesday", "thu", "thursday", "fri", "friday", "sat",
		"saturday", "sun", "sunday", "mon..fri", "mon,tue,fri",
		"mon,tue..wednesday,fri..sat",
	} {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
}
