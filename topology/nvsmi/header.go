package nvsmi

import (
	"strconv"
	"strings"
)

// findHeader returns the index of the header line: the first line whose
// first token is GPU<n> and whose second token is not a topology level
// (the GPU0 row has "X" there).
func (p *parser) findHeader() (int, error) {
	for i, l := range p.lines {
		if len(l.toks) == 0 {
			continue
		}
		first := l.toks[0].text
		if gluedStart.MatchString(first) {
			return 0, errAt(l, l.toks[0], "header cell %q is not a column name: the separators between column names were lost", first)
		}
		if !gpuLabel.MatchString(first) {
			continue
		}
		if len(l.toks) > 1 && isLevel(l.toks[1].text) {
			continue
		}
		return i, nil
	}
	return 0, &ParseError{Msg: "no `nvidia-smi topo -m` header found (a line whose columns start with GPU0); is this the output of nvidia-smi topo -m?"}
}

// parseHeader reads the header line and any continuation lines (a header
// wrapped by a narrow terminal) and returns the index of the first line
// after it.
func (p *parser) parseHeader(hi int) (int, error) {
	p.labelOf = map[string]int{}
	inInfo := false
	i := hi
	for {
		l := p.lines[i]
		toks := l.toks
		for k := 0; k < len(toks); k++ {
			t := toks[k]
			if n := phraseAt(toks, k); n > 0 {
				inInfo = true
				words := make([]string, n)
				for j := range words {
					words[j] = toks[k+j].text
				}
				p.info = append(p.info, token{text: strings.Join(words, " "), col: t.col})
				k += n - 1
				continue
			}
			if err := p.headerWord(l, t, inInfo); err != nil {
				return 0, err
			}
		}
		i++
		if i >= len(p.lines) || !p.headerContinues(p.lines[i]) {
			break
		}
	}
	gpus := 0
	for _, c := range p.cols {
		if c.gpu {
			gpus++
		}
	}
	if gpus == 0 {
		l := p.lines[hi]
		return 0, errAt(l, l.toks[0], "header has no GPU column")
	}
	return i, nil
}

// headerWord classifies one header token that does not start an info
// phrase.
func (p *parser) headerWord(l line, t token, inInfo bool) error {
	w := t.text
	isDevice := gpuLabel.MatchString(w) || nicLabel.MatchString(w)
	if inInfo {
		if isDevice || strings.HasPrefix(w, "mlx5_") {
			return errAt(l, t, "device column %q after the affinity columns: the header is out of order or two headers were joined", w)
		}
		for _, word := range []string{"Affinity", "NUMA", "CPU", "GPU", "NIC"} {
			if strings.Contains(w, word) {
				return errAt(l, t, "header word %q is not a column name: the separators between column names were lost", w)
			}
		}
		// An unknown trailing column of a newer nvidia-smi: keep its
		// place so its values are not taken for another column's.
		p.info = append(p.info, t)
		return nil
	}
	for _, ph := range infoPhrases {
		if w == ph[0] && w != "GPU" {
			return errAt(l, t, "header word %q does not continue as %q: the separators between column names were lost", w, strings.Join(ph, " "))
		}
	}
	if strings.Contains(w, "Affinity") {
		return errAt(l, t, "header cell %q is not a column name: the separators between column names were lost", w)
	}
	switch {
	case gpuLabel.MatchString(w):
		if p.nics > 0 {
			return errAt(l, t, "GPU column %q after NIC columns", w)
		}
		id, _ := strconv.Atoi(gpuLabel.FindStringSubmatch(w)[1])
		return p.addCol(l, t, column{label: w, col: t.col, gpu: true, id: id})
	case gluedStart.MatchString(w), innerLabel.MatchString(w),
		strings.HasPrefix(w, "GPU"), strings.HasPrefix(w, "NIC") && !nicLabel.MatchString(w),
		!nameLabel.MatchString(w), isLevel(w):
		return errAt(l, t, "header cell %q is not a column name: the separators between column names were lost", w)
	}
	return p.addCol(l, t, column{label: w, col: t.col})
}

func (p *parser) addCol(l line, t token, c column) error {
	if _, dup := p.labelOf[c.label]; dup {
		return errAt(l, t, "column %q appears twice in the header", c.label)
	}
	p.labelOf[c.label] = len(p.cols)
	p.cols = append(p.cols, c)
	if !c.gpu {
		p.nics++
	}
	return nil
}

// phraseAt returns the number of tokens an info phrase starting at k uses,
// or 0.
func phraseAt(toks []token, k int) int {
next:
	for _, ph := range infoPhrases {
		if k+len(ph) > len(toks) {
			continue
		}
		for j, w := range ph {
			if toks[k+j].text != w {
				continue next
			}
		}
		return len(ph)
	}
	return 0
}

// headerContinues reports whether l is the wrapped remainder of the
// header: not blank, not a row, and made only of column names.
func (p *parser) headerContinues(l line) bool {
	if len(l.toks) == 0 || p.isRowStart(l) {
		return false
	}
	for k := 0; k < len(l.toks); k++ {
		if n := phraseAt(l.toks, k); n > 0 {
			k += n - 1
			continue
		}
		w := l.toks[k].text
		if isLevel(w) || valueLike.MatchString(w) {
			return false
		}
		if !(gpuLabel.MatchString(w) || nicLabel.MatchString(w) || strings.HasPrefix(w, "mlx5_")) {
			return false
		}
	}
	return true
}
