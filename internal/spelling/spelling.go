package spelling

import "strings"

// Nearest is the name of known closest to word by edit distance (case
// folded), or "" when none is close enough to be the same word mistyped:
// at most two edits, and fewer than half of word's letters, so that "x"
// is not taken for "rx" nor a new name for an old one. Ties go to the
// earlier name of known.
func Nearest(word string, known []string) string {
	w := strings.ToLower(word)
	best, bestD := "", -1
	for _, k := range known {
		d := distance(w, strings.ToLower(k))
		if d == 0 {
			return k
		}
		if d > 2 || 2*d >= len([]rune(w)) {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the Levenshtein distance with adjacent transpositions
// counted as one edit (the commonest typo: "symbol_erorr").
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Names are short (config keys, counter names); a word too long to be
	// one is nobody's typo and is not worth the quadratic table.
	if len(ra) > 256 || len(rb) > 256 {
		return max(len(ra), len(rb))
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
