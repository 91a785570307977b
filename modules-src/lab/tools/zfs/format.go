package zfs

import (
	"fmt"
	"io"
	"strings"
)

// Nicenum formats a byte count the way libzfs's zfs_nicenum does: 1024-based,
// at most 5 characters ("476G", "11.5G", "96K"), exact multiples without decimals.
func Nicenum(n uint64) string {
	const units = "BKMGTPE"
	u := 0
	for v := n; v >= 1024 && u < len(units)-1; v /= 1024 {
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d", n)
	}
	div := float64(uint64(1) << (10 * u))
	if n%(uint64(1)<<(10*u)) == 0 {
		return fmt.Sprintf("%d%c", n>>(10*u), units[u])
	}
	for prec := 2; prec >= 0; prec-- {
		s := fmt.Sprintf("%.*f%c", prec, float64(n)/div, units[u])
		if len(s) <= 5 {
			return s
		}
	}
	return fmt.Sprintf("%.0f%c", float64(n)/div, units[u])
}

// column describes one output column of a list/get table.
type column struct {
	header string
	right  bool // numbers are right-justified
	min    int  // fixed-width columns (numbers: 5, health: 8)
}

// writeTable prints rows the way zpool/zfs list and get do: with -H, tab
// separated and no header; otherwise two spaces between columns, widths from
// the widest cell, the last column not padded.
func writeTable(w io.Writer, cols []column, rows [][]string, scripted, noHeader bool) {
	writeTableWith(w, cols, rows, scripted, noHeader, nil)
}

// writeTableWith is writeTable calling after(i), when set, once row i is
// printed (zpool list -v prints each pool's vdevs under its line).
func writeTableWith(w io.Writer, cols []column, rows [][]string, scripted, noHeader bool, after func(i int)) {
	if after == nil {
		after = func(int) {}
	}
	if scripted {
		for i, r := range rows {
			fmt.Fprintln(w, strings.Join(r, "\t"))
			after(i)
		}
		return
	}
	width := make([]int, len(cols))
	for i, c := range cols {
		width[i] = max(len(c.header), c.min)
		for _, r := range rows {
			width[i] = max(width[i], len(r[i]))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			last := i == len(cells)-1
			switch {
			case cols[i].right:
				fmt.Fprintf(&b, "%*s", width[i], c)
			case last:
				b.WriteString(c)
			default:
				fmt.Fprintf(&b, "%-*s", width[i], c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
	if !noHeader {
		h := make([]string, len(cols))
		for i, c := range cols {
			h[i] = c.header
		}
		line(h)
	}
	for i, r := range rows {
		line(r)
		after(i)
	}
}

// writeGetTable prints the table of zfs get and zpool get: each row holds one
// property's cells by field name ("name", "property", "value", ...); the -o
// fields pick which cells are shown, in order, under their names in upper case.
// A field a row has no cell for shows empty.
func writeGetTable(w io.Writer, fields []string, rows []map[string]string, scripted bool) {
	var cols []column
	for _, f := range fields {
		cols = append(cols, column{header: strings.ToUpper(f)})
	}
	var cells [][]string
	for _, row := range rows {
		var r []string
		for _, f := range fields {
			r = append(r, row[f])
		}
		cells = append(cells, r)
	}
	writeTable(w, cols, cells, scripted, false)
}
