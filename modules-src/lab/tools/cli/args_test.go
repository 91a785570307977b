package cli

import (
	"reflect"
	"testing"
)

func TestGetopt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		opts    []Opt
		rest    []string
		wantErr bool
	}{
		{"grouped flags", []string{"-Hp", "tank"}, []Opt{{'H', ""}, {'p', ""}}, []string{"tank"}, false},
		{"value attached and separate", []string{"-oname,size", "-O", "atime=off", "tank"}, []Opt{{'o', "name,size"}, {'O', "atime=off"}}, []string{"tank"}, false},
		{"permutation", []string{"tank", "-H"}, []Opt{{'H', ""}}, []string{"tank"}, false},
		{"double dash", []string{"-H", "--", "-x"}, []Opt{{'H', ""}}, []string{"-x"}, false},
		{"unknown", []string{"-z"}, nil, nil, true},
		{"missing value", []string{"-o"}, nil, nil, true},
	} {
		opts, rest, err := Getopt(tc.args, "Hpo:O:")
		if (err != nil) != tc.wantErr {
			t.Fatalf("%s: err %v", tc.name, err)
		}
		if !tc.wantErr && (!reflect.DeepEqual(opts, tc.opts) || !reflect.DeepEqual(rest, tc.rest)) {
			t.Errorf("%s: got %v %v, want %v %v", tc.name, opts, rest, tc.opts, tc.rest)
		}
	}
}

func TestPVEArgs(t *testing.T) {
	bools := map[string]bool{"use_ssh": true}
	for _, tc := range []struct {
		name string
		args []string
		pos  []string
		opts map[string]string
	}{
		{"seed join", []string{"add", "10.0.0.1", "--use_ssh", "--link0", "10.0.0.2"}, []string{"add", "10.0.0.1"}, map[string]string{"use_ssh": "1", "link0": "10.0.0.2"}},
		{"bool with value", []string{"--use_ssh", "0", "x"}, []string{"x"}, map[string]string{"use_ssh": "0"}},
		{"equals form", []string{"--content=iso,snippets", "local"}, []string{"local"}, map[string]string{"content": "iso,snippets"}},
		{"repeated", []string{"--delete", "a", "--delete", "b"}, nil, map[string]string{"delete": "a\x00b"}},
	} {
		pos, opts, err := PVEArgs(tc.args, bools)
		if err != nil || !reflect.DeepEqual(pos, tc.pos) || !reflect.DeepEqual(opts, tc.opts) {
			t.Errorf("%s: got %q %q %v", tc.name, pos, opts, err)
		}
	}
	if _, _, err := PVEArgs([]string{"--link0"}, bools); err == nil {
		t.Error("a value option without value was accepted")
	}
}
