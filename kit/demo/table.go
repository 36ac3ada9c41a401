package demo

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// A Table is what a demo prints: a header of columns (one per build or
// setup) and rows of figures, each row a label and one value per column.
// Printed, cells are separated by at least two spaces and the header line
// is indented, so Figures can read a table back from a page.
type Table struct {
	Columns []string
	Rows    [][]string // label, then one value per column
}

// Add appends a row.
func (t *Table) Add(label string, values ...any) {
	row := []string{label}
	for _, v := range values {
		s := strings.Join(strings.Fields(fmt.Sprint(v)), " ") // one space: two separate cells
		if s == "" {
			s = "-"
		}
		row = append(row, s)
	}
	t.Rows = append(t.Rows, row)
}

// Print writes t.
func (t Table) Print(w io.Writer) {
	label := 10 // a header's blank label column is what marks it as one
	for _, r := range t.Rows {
		label = max(label, len(r[0]))
	}
	widths := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		widths[i] = len(c)
		for _, r := range t.Rows {
			if i+1 < len(r) {
				widths[i] = max(widths[i], len(r[i+1]))
			}
		}
	}
	fmt.Fprintf(w, "%-*s", label, "")
	for i, c := range t.Columns {
		fmt.Fprintf(w, "  %*s", widths[i], c)
	}
	fmt.Fprintln(w)
	for _, r := range t.Rows {
		fmt.Fprintf(w, "%-*s", label, r[0])
		for i := range t.Columns {
			v := ""
			if i+1 < len(r) {
				v = r[i+1]
			}
			fmt.Fprintf(w, "  %*s", widths[i], v)
		}
		fmt.Fprintln(w)
	}
}

var cellSep = regexp.MustCompile(`\s{2,}`)

// Figures reads the tables in text (a demo's output, or a page's copy of
// it) as "row | column" -> value. A table starts at an indented line of two
// or more column names and runs to the first blank or indented line.
func Figures(text string) map[string]string {
	figs := map[string]string{}
	var cols []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, " \r")
		switch {
		case line == "":
			cols = nil
		case strings.HasPrefix(line, "  "):
			cells := cellSep.Split(strings.TrimSpace(line), -1)
			cols = nil
			if len(line)-len(strings.TrimLeft(line, " ")) >= 8 { // a header: the label column is blank
				cols = cells
			}
		case cols != nil:
			cells := cellSep.Split(line, -1)
			if len(cells) != len(cols)+1 {
				continue
			}
			for i, c := range cols {
				figs[cells[0]+" | "+c] = cells[i+1]
			}
		}
	}
	return figs
}
