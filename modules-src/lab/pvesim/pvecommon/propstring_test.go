package pvecommon

import (
	"regexp"
	"slices"
	"testing"
)

// A property string keeps its keys' first order, takes a bare part as the
// default key's value, and prints the default key first and the rest
// sorted, as print_property_string does.
func TestPropsParsePrint(t *testing.T) {
	p := ParseProps(" local-lvm:vm-100-disk-0 ,size=32G,,cache=none,size=40G", "file")
	if !slices.Equal(p.Keys, []string{"file", "size", "cache"}) {
		t.Fatalf("keys %v, want file size cache (first order, a repeated key once)", p.Keys)
	}
	if p.Get("size") != "40G" || p.Get("file") != "local-lvm:vm-100-disk-0" {
		t.Fatalf("values %v: the last size wins, the bare part is file's", p.Vals)
	}
	if got, want := p.Print("file"), "local-lvm:vm-100-disk-0,cache=none,size=40G"; got != want {
		t.Fatalf("Print = %q, want %q", got, want)
	}
	p.Del("cache")
	p.Set("aio", "native")
	p.Set("size", "1G")
	if got, want := p.Print("file"), "local-lvm:vm-100-disk-0,aio=native,size=1G"; got != want {
		t.Fatalf("after Del/Set Print = %q, want %q", got, want)
	}
	if p.Has("cache") || !slices.Equal(p.Keys, []string{"file", "size", "aio"}) {
		t.Fatalf("after Del(cache) keys %v", p.Keys)
	}
	var z Props
	z.Set("k", "")
	if !z.Has("k") || z.Print("") != "k=" {
		t.Fatalf("a zero Props takes Set: %+v", z)
	}
}

// random_ether_addr's MACs carry PVE's default prefix, upper case.
func TestRandomMAC(t *testing.T) {
	got := RandomMAC("a1b2c3")
	if got != "BC:24:11:A1:B2:C3" {
		t.Fatalf("RandomMAC = %q", got)
	}
	if !regexp.MustCompile(`^BC:24:11(:[0-9A-F]{2}){3}$`).MatchString(RandomMAC("0f0e0d")) {
		t.Fatal("not a MAC")
	}
}
