package qemuserver

import "testing"

// clone_vm: full unless the source is a template, the full parameter
// wins; a linked clone takes no storage and no format.
func TestCloneFull(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		template        bool
		full            *bool
		storage, format string
		want            bool
		err             string
	}{
		{false, nil, "", "", true, ""},
		{true, nil, "", "", false, ""},
		{true, &yes, "local-lvm", "raw", true, ""},
		{false, &no, "", "", false, ""},
		{true, nil, "local-lvm", "", false, "parameter 'storage' not allowed for linked clones"},
		{false, &no, "", "qcow2", false, "parameter 'format' not allowed for linked clones"},
	}
	for _, c := range cases {
		got, err := CloneFull(c.template, c.full, c.storage, c.format)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != c.err || (err == nil && got != c.want) {
			t.Errorf("%+v: CloneFull = %v, %q", c, got, msg)
		}
	}
}

// clone_vm copies neither snapshot nor running-state information nor
// unused volumes.
func TestCloneDrops(t *testing.T) {
	for k, want := range map[string]bool{"parent": true, "snaptime": true, "vmstate": true, "runningcpu": true,
		"runningmachine": true, "running-nets-host-mtu": true, "unused0": true, "unused12": true,
		"name": false, "scsi0": false, "net0": false, "lock": false, "meta": false} {
		if CloneDrops(k) != want {
			t.Errorf("CloneDrops(%s) = %v", k, !want)
		}
	}
}
