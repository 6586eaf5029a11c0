package ops

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/storage"
)

// The history chart's drawing area, in SVG user units: the plot inside
// the margins that hold the axes' labels.
const (
	chartWidth  = 900
	chartHeight = 240
	chartLeft   = 64
	chartRight  = 64
	chartTop    = 16
	chartBottom = 36
)

// chart is the sync history's chart as the template draws it (inline SVG):
// one bar per sync for the rows it stored (right axis) and a line through
// the syncs' durations (left axis), over their start times; failed syncs'
// points are marked. Every field is a number or a text the template
// escapes: nothing is trusted as markup.
type chart struct {
	Width, Height int
	// Left, Right, Top and Bottom bound the plot.
	Left, Right, Top, Bottom int
	// Line is the duration line's points ("x,y x,y …").
	Line   string
	Bars   []chartBar
	Points []chartPoint
	// MaxDuration and MaxRows label the top of the left and right axes;
	// From and To the first and last start on the time axis.
	MaxDuration, MaxRows, From, To string
	// Summary describes the chart for assistive technology (aria).
	Summary string
}

// chartBar is one sync's rows.
type chartBar struct {
	X, Y, Width, Height float64
}

// chartPoint is one sync's duration, with its tooltip.
type chartPoint struct {
	X, Y   float64
	Failed bool
	Label  string
}

// newChart lays out the chart of history (newest first, as storage returns
// it); nil when there is nothing to draw.
func newChart(history []storage.SyncRecord) *chart {
	if len(history) == 0 {
		return nil
	}
	c := &chart{Width: chartWidth, Height: chartHeight, Left: chartLeft, Right: chartWidth - chartRight,
		Top: chartTop, Bottom: chartHeight - chartBottom}
	first, last := history[len(history)-1].StartedAt, history[0].StartedAt
	span := last.Sub(first)
	var maxDur time.Duration
	var maxRows int64
	failed := 0
	for _, r := range history {
		maxDur = max(maxDur, r.Duration())
		maxRows = max(maxRows, rowsOf(r))
		if !r.Succeeded() {
			failed++
		}
	}
	maxDur = max(maxDur, time.Millisecond)
	maxRows = max(maxRows, 1)
	plotW, plotH := float64(c.Right-c.Left), float64(c.Bottom-c.Top)
	barW := max(min(plotW/float64(len(history))*0.6, 24), 2)
	x := func(t time.Time) float64 {
		if span <= 0 {
			return float64(c.Left) + plotW/2
		}
		return float64(c.Left) + plotW*float64(t.Sub(first))/float64(span)
	}
	line := make([]string, 0, len(history))
	for i := len(history) - 1; i >= 0; i-- { // oldest first, left to right
		r := history[i]
		px := x(r.StartedAt)
		h := plotH * float64(rowsOf(r)) / float64(maxRows)
		c.Bars = append(c.Bars, chartBar{X: round1(px - barW/2), Y: round1(float64(c.Bottom) - h), Width: round1(barW), Height: round1(h)})
		py := float64(c.Bottom) - plotH*float64(r.Duration())/float64(maxDur)
		line = append(line, coord(px)+","+coord(py))
		c.Points = append(c.Points, chartPoint{X: round1(px), Y: round1(py), Failed: !r.Succeeded(),
			Label: fmt.Sprintf("%s · %s · %d rows · %s", r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), duration(r.Duration()), rowsOf(r), r.Outcome)})
	}
	c.Line = strings.Join(line, " ")
	c.MaxDuration, c.MaxRows = duration(maxDur), strconv.FormatInt(maxRows, 10)
	c.From, c.To = first.UTC().Format("2006-01-02 15:04"), last.UTC().Format("2006-01-02 15:04")
	c.Summary = fmt.Sprintf("%d syncs from %s to %s UTC: durations up to %s, up to %d rows stored by one sync, %d failed.",
		len(history), c.From, c.To, c.MaxDuration, maxRows, failed)
	return c
}

// rowsOf is every row a sync stored: added, modified and removed.
func rowsOf(r storage.SyncRecord) int64 {
	return r.Changes.Added + r.Changes.Modified + r.Changes.Removed
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

func coord(v float64) string { return strconv.FormatFloat(round1(v), 'f', -1, 64) }

// duration formats a sync's duration for the page: milliseconds under a
// second, else seconds to a tenth, else minutes and seconds.
func duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(float64(d.Milliseconds())/1000, 'f', 1, 64) + " s"
	}
	return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
}
