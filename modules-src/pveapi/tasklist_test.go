package pveapi

import (
	"testing"
	"time"
)

func TestTaskQueryParams(t *testing.T) {
	q := TaskQuery{TypeFilter: "qmclone", VMID: 201, Since: time.Unix(1700000000, 0), Source: "all", Errors: true, Limit: 10}.Params()
	for k, want := range map[string]string{"typefilter": "qmclone", "vmid": "201", "since": "1700000000", "source": "all", "errors": "1", "limit": "10"} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	if len(TaskQuery{}.Params()) != 0 {
		t.Error("an empty query sends no filter")
	}
}
