package hosttest

import "testing"

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, line string
		want          bool
	}{
		{"zpool list", "zpool list", true},
		{"zpool list", "zpool list -H", false},
		{"zpool list *", "zpool list", true},
		{"zpool list *", "zpool list -H -p tank", true},
		{"zpool list *", "zpool listx", false},
		{"apt-get -o * update", "apt-get -o Dir::Etc=/tmp/x -o A=b update", true},
		{"apt-get -o * update", "apt-get -o Dir::Etc=/tmp/x -s dist-upgrade", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXcYb", false},
	}
	for _, c := range cases {
		if got := match(c.pattern, c.line); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.line, got, c.want)
		}
	}
}
