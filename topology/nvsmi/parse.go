package nvsmi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nichealth/nichealthd/topology/gpumeta"
)

// MaxInput bounds what Parse reads. A real matrix for a 1024-NIC node is a
// few hundred KiB; anything larger is not a topo -m output.
const MaxInput = 4 << 20

// ParseError says where a paste stopped being readable. Line and Col are
// 1-based; Col counts characters (a tab is one) after colour escapes are
// removed. Line 0 means the problem is the input as a whole.
type ParseError struct {
	Line int
	Col  int
	Msg  string
}

func (e *ParseError) Error() string {
	switch {
	case e.Line == 0:
		return e.Msg
	case e.Col == 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

var (
	// ansi matches SGR and other CSI escapes; the ESC is optional because
	// pastes through some tools keep "[4m" and lose the ESC itself. No
	// legitimate topo -m text contains '['.
	ansi = regexp.MustCompile(`\x1b?\[[0-9;?]*[ -/]*[@-~]|\x1b`)

	gpuLabel   = regexp.MustCompile(`^GPU([0-9]+)$`)
	nicLabel   = regexp.MustCompile(`^NIC([0-9]+)$`)
	nameLabel  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:@-]*$`)
	gluedStart = regexp.MustCompile(`^(GPU|NIC)[0-9]+[A-Za-z]`)
	innerLabel = regexp.MustCompile(`.(GPU[0-9]|NIC[0-9]|mlx5_)`)
	legendLine = regexp.MustCompile(`^\s*(NIC[0-9]+)\s*:\s*(\S+)\s*$`)
	leadingInt = regexp.MustCompile(`^[0-9]+`)
	valueLike  = regexp.MustCompile(`^([0-9][0-9,\-]*|N/A)$`)
)

// infoPhrases are the per-GPU columns nvidia-smi prints after the device
// columns. They contain spaces, so a header is tokenised by whitespace and
// these word sequences are joined back.
var infoPhrases = [][]string{
	{"CPU", "Affinity"},
	{"NUMA", "Affinity"},
	{"GPU", "NUMA", "ID"},
}

const numaColumn = "NUMA Affinity"

type token struct {
	text string
	col  int // 1-based character column
}

type line struct {
	num  int
	text string
	toks []token
}

type column struct {
	label string
	col   int
	gpu   bool
	id    int // GPU number for GPU columns
}

type row struct {
	line  int
	cells []token
	info  []token
}

// Parse reads `nvidia-smi topo -m` output and returns the matrix in the
// shape of gpu_metadata.json: GPUs in column order with gpu_id from their
// label and numa_node from the first integer of "NUMA Affinity" (-1 when
// the column is absent or says N/A); one row per NIC column, named through
// the "NIC Legend:" block when there is one and by the column header
// otherwise (old outputs head the columns mlx5_0, mlx5_1, ...).
//
// Accepted: tabs or spaces, colour escapes, CRLF, preamble lines, header
// and rows wrapped onto a following line, extra columns (GPU NUMA ID),
// self cells " X " or "X", NVLink cells (NV18), SOC (the pre-R384 name of
// SYS, normalised to SYS), the trailing Legend block, no NIC at all.
//
// A *ParseError with line and column is returned when the text cannot be
// read without guessing: no header, cells glued together (PIXNODE), a
// header that lost its separators (GPU0GPU1), a row with too few or too
// many cells, a self cell off the diagonal, GPU and NIC rows that
// disagree, a missing GPU row, two NICs with one name.
func Parse(r io.Reader) (*gpumeta.Matrix, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("read nvidia-smi topo -m output: %w", err)
	}
	if len(data) > MaxInput {
		return nil, &ParseError{Msg: fmt.Sprintf("input is larger than %d bytes; not an nvidia-smi topo -m output", MaxInput)}
	}
	lines := splitLines(data)
	p := &parser{lines: lines}
	return p.parse()
}

type parser struct {
	lines   []line
	cols    []column
	info    []token // info column names with their header columns
	rows    map[string]row
	labelOf map[string]int // label -> index in cols
	nics    int            // NIC columns so far
}

func splitLines(data []byte) []line {
	var out []line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), MaxInput+1)
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimRight(sc.Text(), "\r")
		text = ansi.ReplaceAllString(text, "")
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
		out = append(out, line{num: n, text: text, toks: tokenize(text)})
	}
	return out
}

// tokenize splits on any Unicode white space (tabs, spaces, the
// non-breaking spaces web pages turn blanks into) and remembers where each
// token starts.
func tokenize(s string) []token {
	var out []token
	col, start, startCol := 0, -1, 0
	for i, r := range s {
		col++
		if unicode.IsSpace(r) {
			if start >= 0 {
				out = append(out, token{text: s[start:i], col: startCol})
				start = -1
			}
			continue
		}
		if start < 0 {
			start, startCol = i, col
		}
	}
	if start >= 0 {
		out = append(out, token{text: s[start:], col: startCol})
	}
	return out
}

func errAt(l line, t token, format string, a ...any) error {
	return &ParseError{Line: l.num, Col: t.col, Msg: fmt.Sprintf(format, a...)}
}

// normLevel maps a cell to its gpu_metadata.json spelling.
func normLevel(s string) string {
	if s == "SOC" {
		return gpumeta.LevelSYS
	}
	return s
}

func isLevel(s string) bool { return gpumeta.ValidLevel(normLevel(s)) }

func (p *parser) parse() (*gpumeta.Matrix, error) {
	hi, err := p.findHeader()
	if err != nil {
		return nil, err
	}
	next, err := p.parseHeader(hi)
	if err != nil {
		return nil, err
	}
	if err := p.parseRows(next); err != nil {
		return nil, err
	}
	names, err := p.nicNames()
	if err != nil {
		return nil, err
	}
	return p.build(names)
}

// isRowStart reports whether l starts a matrix row: its first token is a
// header label and its second a topology level.
func (p *parser) isRowStart(l line) bool {
	if len(l.toks) < 2 {
		return false
	}
	_, ok := p.labelOf[l.toks[0].text]
	return ok && isLevel(l.toks[1].text)
}

// rowContinues reports whether l is the wrapped remainder of a row: every
// token is a level or a value such as a CPU range.
func rowContinues(l line) bool {
	if len(l.toks) == 0 {
		return false
	}
	for _, t := range l.toks {
		if !isLevel(t.text) && !valueLike.MatchString(t.text) {
			return false
		}
	}
	return true
}

func isLegendStart(l line) bool {
	return len(l.toks) > 0 && (l.toks[0].text == "Legend:" || (l.toks[0].text == "NIC" && len(l.toks) > 1 && l.toks[1].text == "Legend:"))
}

// parseRows reads rows from line index i until the legend, a line that is
// neither row nor wrapped row, or the end.
func (p *parser) parseRows(i int) error {
	p.rows = map[string]row{}
	nDev := len(p.cols)
	for i < len(p.lines) {
		l := p.lines[i]
		if len(l.toks) == 0 {
			i++
			continue
		}
		if isLegendStart(l) {
			break
		}
		if !p.isRowStart(l) {
			if gluedStart.MatchString(l.toks[0].text) {
				return errAt(l, l.toks[0], "row label %q is glued to its first cell", l.toks[0].text)
			}
			if _, ok := p.labelOf[l.toks[0].text]; ok && len(l.toks) > 1 {
				t := l.toks[1]
				return errAt(l, t, "cell %q under %s is not a topology level (X, PIX, PXB, PHB, NODE, SYS, NV<n>); cells glued together?", t.text, p.cols[0].label)
			}
			if rowContinues(l) {
				return errAt(l, l.toks[0], "line does not start with a GPU or NIC label; a wrapped line must directly follow its row")
			}
			break
		}
		label := l.toks[0]
		if prev, dup := p.rows[label.text]; dup {
			return errAt(l, label, "second row for %s (first on line %d)", label.text, prev.line)
		}
		toks := append([]token(nil), l.toks[1:]...)
		// Join wrapped remainders: the following lines made only of levels
		// and values belong to this row.
		for i+1 < len(p.lines) && rowContinues(p.lines[i+1]) && !p.isRowStart(p.lines[i+1]) {
			i++
			toks = append(toks, p.lines[i].toks...)
		}
		if err := p.addRow(l, label, toks, nDev); err != nil {
			return err
		}
		i++
	}
	return nil
}

func (p *parser) addRow(l line, label token, toks []token, nDev int) error {
	self := p.labelOf[label.text]
	r := row{line: l.num}
	for k, t := range toks {
		if k >= nDev {
			r.info = toks[k:]
			break
		}
		c := p.cols[k]
		lvl := normLevel(t.text)
		if !gpumeta.ValidLevel(lvl) {
			return errAt(l, t, "cell %q under %s is not a topology level (X, PIX, PXB, PHB, NODE, SYS, NV<n>); cells glued together or a cell lost?", t.text, c.label)
		}
		if (k == self) != (lvl == gpumeta.LevelSelf) {
			if k == self {
				return errAt(l, t, "row %s has %q under its own column, expected X: the row is shifted", label.text, t.text)
			}
			return errAt(l, t, "row %s has X under %s, which is not its own column: the row is shifted", label.text, c.label)
		}
		r.cells = append(r.cells, token{text: lvl, col: t.col})
	}
	if len(r.cells) < nDev {
		col := label.col
		if len(toks) > 0 {
			col = toks[len(toks)-1].col
		}
		return &ParseError{Line: l.num, Col: col, Msg: fmt.Sprintf("row %s has %d cells, the header has %d device columns", label.text, len(r.cells), nDev)}
	}
	if len(r.info) > len(p.info) {
		t := r.info[len(p.info)]
		return errAt(l, t, "row %s has %d values after its cells, the header has %d columns there (%s)", label.text, len(r.info), len(p.info), infoNames(p.info))
	}
	for _, t := range r.info {
		if isLevel(t.text) {
			return errAt(l, t, "row %s has the topology level %q among its affinity values: the row has more cells than the header has columns", label.text, t.text)
		}
	}
	p.rows[label.text] = r
	return nil
}

func infoNames(ts []token) string {
	if len(ts) == 0 {
		return "none"
	}
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.text
	}
	return strings.Join(s, ", ")
}

// nicNames maps NIC column labels to device names through the NIC Legend
// block (NIC0: mlx5_0); labels without a legend entry are names already.
func (p *parser) nicNames() (map[string]string, error) {
	legend := map[string]string{}
	where := map[string]int{}
	for _, l := range p.lines {
		m := legendLine.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		if prev, ok := legend[m[1]]; ok && prev != m[2] {
			return nil, &ParseError{Line: l.num, Msg: fmt.Sprintf("legend maps %s to %s and (line %d) to %s", m[1], m[2], where[m[1]], prev)}
		}
		legend[m[1]], where[m[1]] = m[2], l.num
	}
	names := map[string]string{}
	owner := map[string]string{}
	for _, c := range p.cols {
		if c.gpu {
			continue
		}
		name := c.label
		if n, ok := legend[c.label]; ok {
			name = n
		}
		if prev, dup := owner[name]; dup {
			return nil, &ParseError{Msg: fmt.Sprintf("NIC columns %s and %s both name device %s", prev, c.label, name)}
		}
		owner[name] = c.label
		names[c.label] = name
	}
	return names, nil
}

func (p *parser) build(names map[string]string) (*gpumeta.Matrix, error) {
	m := &gpumeta.Matrix{NICs: map[string][]string{}, Source: gpumeta.SourceNvidiaSMI}
	numaIdx := -1
	for i, t := range p.info {
		if t.text == numaColumn {
			numaIdx = i
		}
	}
	var gpuCols []int
	for k, c := range p.cols {
		if !c.gpu {
			continue
		}
		r, ok := p.rows[c.label]
		if !ok {
			return nil, &ParseError{Msg: fmt.Sprintf("no row for %s: the output is truncated", c.label)}
		}
		numa := -1
		if numaIdx >= 0 && numaIdx < len(r.info) {
			if s := leadingInt.FindString(r.info[numaIdx].text); s != "" {
				if v, err := strconv.Atoi(s); err == nil {
					numa = v
				}
			}
		}
		m.GPUs = append(m.GPUs, gpumeta.GPU{ID: c.id, NUMANode: numa})
		gpuCols = append(gpuCols, k)
	}
	for k, c := range p.cols {
		if c.gpu {
			continue
		}
		out := make([]string, len(gpuCols))
		nicRow, hasNICRow := p.rows[c.label]
		for i, gk := range gpuCols {
			g := p.rows[p.cols[gk].label]
			out[i] = g.cells[k].text
			// The matrix is symmetric; a NIC row that disagrees with the GPU
			// rows means one of them is shifted.
			if hasNICRow && nicRow.cells[gk].text != out[i] {
				cell := nicRow.cells[gk]
				return nil, &ParseError{Line: nicRow.line, Col: cell.col, Msg: fmt.Sprintf(
					"row %s says %s to %s but row %s (line %d) says %s: the rows are shifted",
					c.label, cell.text, p.cols[gk].label, p.cols[gk].label, g.line, out[i])}
			}
		}
		m.NICs[names[c.label]] = out
	}
	return m, nil
}

// IsParseError reports whether err is a *ParseError (the input is
// mangled, as opposed to unreadable).
func IsParseError(err error) bool {
	var pe *ParseError
	return errors.As(err, &pe)
}
