package web

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// Charts are drawn on the server as SVG inside the page: no script, no
// library, nothing loaded. Every label (model and source names are stored
// content) is escaped; bars carry a <title> with the exact number, so a
// pointer shows it, and each chart sits beside a table of the same numbers.

// series is one stack layer of a bar chart.
type series struct {
	Name   string
	Class  string // CSS class of its bars (colour)
	Values []float64
}

// fmtNum is a number for an axis or a tooltip: 1.2k, 3.4M, or the value.
func fmtNum(v float64, money bool) string {
	prefix := ""
	if money {
		prefix = "$"
	}
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%s%.1fG", prefix, v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%s%.1fM", prefix, v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%s%.1fk", prefix, v/1e3)
	case money && a > 0 && a < 0.1:
		return fmt.Sprintf("$%.4f", v)
	case money:
		return fmt.Sprintf("$%.2f", v)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func esc(s string) string { return template.HTMLEscapeString(s) }

// columnChart draws stacked columns, one per label, with a legend.
func columnChart(title string, labels []string, layers []series, money bool) template.HTML {
	const w, h, left, bottom, top = 720.0, 240.0, 70.0, 36.0, 28.0
	n := len(labels)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, w, h, esc(title))
	fmt.Fprintf(&b, `<title>%s</title>`, esc(title))
	peak := 0.0
	for i := range n {
		sum := 0.0
		for _, l := range layers {
			sum += math.Max(0, l.Values[i])
		}
		peak = math.Max(peak, sum)
	}
	if n == 0 || peak == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%.0f" y="%.0f">nothing recorded in this period</text></svg>`, w/2, h/2)
		return template.HTML(b.String()) // #nosec: built from escaped parts
	}
	peak = niceCeil(peak)
	plotH := h - bottom - top
	for k := 0; k <= 4; k++ {
		y := top + plotH - plotH*float64(k)/4
		fmt.Fprintf(&b, `<line class="grid" x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f"/>`, left, w-8, y, y)
		fmt.Fprintf(&b, `<text class="axis" x="%.0f" y="%.1f" text-anchor="end">%s</text>`, left-6, y+4, esc(fmtNum(peak*float64(k)/4, money)))
	}
	slot := (w - left - 8) / float64(n)
	bar := math.Max(1, slot*0.75)
	every := int(math.Ceil(float64(n) / 12))
	for i := range n {
		x := left + slot*float64(i) + (slot-bar)/2
		y := top + plotH
		for _, l := range layers {
			v := math.Max(0, l.Values[i])
			bh := plotH * v / peak
			y -= bh
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s %s: %s</title></rect>`,
				esc(l.Class), x, y, bar, bh, esc(labels[i]), esc(l.Name), esc(fmtExact(v, money)))
		}
		if i%every == 0 {
			fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.0f" text-anchor="middle">%s</text>`, x+bar/2, h-bottom+16, esc(labels[i]))
		}
	}
	lx := left
	for _, l := range layers {
		fmt.Fprintf(&b, `<rect class="%s" x="%.0f" y="8" width="10" height="10"/><text class="legend" x="%.0f" y="17">%s</text>`,
			esc(l.Class), lx, lx+14, esc(l.Name))
		lx += 14 + 8*float64(len(l.Name)) + 16
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // #nosec: built from escaped parts
}

// barChart draws one horizontal bar per label (a model, a source).
func barChart(title string, labels []string, values []float64, class string, money bool) template.HTML {
	const w, rowH, left, right = 720.0, 22.0, 200.0, 90.0
	n := len(labels)
	h := rowH*float64(max(n, 1)) + 12
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s"><title>%s</title>`, w, h, esc(title), esc(title))
	peak := 0.0
	for _, v := range values {
		peak = math.Max(peak, v)
	}
	if n == 0 || peak == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%.0f" y="%.0f">nothing recorded</text></svg>`, w/2, h/2+4)
		return template.HTML(b.String()) // #nosec: built from escaped parts
	}
	for i, label := range labels {
		y := 6 + rowH*float64(i)
		bw := (w - left - right) * math.Max(0, values[i]) / peak
		fmt.Fprintf(&b, `<text class="axis" x="%.0f" y="%.1f" text-anchor="end">%s</text>`, left-8, y+14, esc(clip(label, 28)))
		fmt.Fprintf(&b, `<rect class="%s" x="%.0f" y="%.1f" width="%.1f" height="%.0f"><title>%s: %s</title></rect>`,
			esc(class), left, y+2, math.Max(bw, 1), rowH-6, esc(label), esc(fmtExact(values[i], money)))
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.1f">%s</text>`, left+math.Max(bw, 1)+6, y+14, esc(fmtNum(values[i], money)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // #nosec: built from escaped parts
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten, so the
// axis ticks (quarters of it) read as round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// fmtExact is a value as the tables print it.
func fmtExact(v float64, money bool) string {
	if money {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// clip cuts s to n characters with "…".
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
