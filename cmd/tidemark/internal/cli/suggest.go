package cli

import (
	"fmt"
	"strings"
)

// Unknown is the error for a command line whose first words (args) name
// no command: it says what was typed, suggests the nearest command when
// one is close (a typo, a plural, a prefix) and points to the help rather
// than printing it all. Refused: exit status 2.
func (l List[E]) Unknown(args []string) error {
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || len(words) == 2 {
			break
		}
		words = append(words, a)
	}
	if len(words) == 0 {
		return Refused("unknown command %q\nRun \"%s help\" for the list of commands.", strings.Join(args, " "), l.Program)
	}
	typed, suggestion := words[0], ""
	if len(words) == 2 {
		if name, ok := l.nearest(words, true); ok {
			typed, suggestion = words[0]+" "+words[1], name
		}
	}
	help := fmt.Sprintf("Run \"%s help\" for the list of commands.", l.Program)
	if suggestion == "" && l.IsGroup(words[0]) {
		// A known group with a verb none of its commands has.
		typed = strings.Join(words, " ")
		help = fmt.Sprintf("Run \"%s %s help\" for its commands.", l.Program, words[0])
	} else if suggestion == "" {
		if name, ok := l.nearest(words[:1], false); ok {
			suggestion = name
		}
		// What follows a group's mistyped name is part of the command
		// the reader meant.
		if len(words) == 2 && l.IsGroup(suggestion) {
			typed = words[0] + " " + words[1]
		}
	}
	msg := fmt.Sprintf("unknown command %q", typed)
	if suggestion != "" {
		msg += fmt.Sprintf("; did you mean %q?", suggestion)
	}
	return Refused("%s\n%s", msg, help)
}

// nearest is the command (or, with one word and !pairs, the group) whose
// words are each near the words typed, the nearest first; false when none
// is near.
func (l List[E]) nearest(typed []string, pairs bool) (string, bool) {
	var names []string
	seen := map[string]bool{}
	for _, c := range l.Commands {
		w := strings.Fields(c.Name)
		if len(w) == len(typed) {
			names = append(names, c.Name)
		}
		if !pairs && len(w) > 1 && !seen[w[0]] {
			seen[w[0]] = true
			names = append(names, w[0])
		}
	}
	best, bestScore := "", -1
	for _, name := range names {
		score := 0
		for i, w := range strings.Fields(name) {
			d, ok := wordDistance(typed[i], w)
			if !ok {
				score = -1
				break
			}
			score += d
		}
		if score >= 0 && (bestScore < 0 || score < bestScore) {
			best, bestScore = name, score
		}
	}
	return best, bestScore >= 0
}

// wordDistance is how far typed is from word, and whether it is near
// enough to suggest: a plural, a prefix of at least three letters, or a
// typo or two (one in a word shorter than five letters).
func wordDistance(typed, word string) (int, bool) {
	switch {
	case typed == word:
		return 0, true
	case typed == word+"s" || word == typed+"s", len(typed) >= 3 && strings.HasPrefix(word, typed):
		return 1, true
	}
	d := editDistance(typed, word)
	limit := 1
	if len(word) >= 5 {
		limit = 2
	}
	return d, d <= limit
}

// editDistance is the Levenshtein distance between a and b, in bytes:
// command names are ASCII.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
