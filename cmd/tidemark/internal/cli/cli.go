// Package cli is the grammar of tidemark's command line: its commands, the
// synopses and help built from the flags each declares, and the parsing
// of a command's arguments. What the commands do stays in package main.
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// Command is one command, run in an environment E. Its flags are declared
// by one function, which both its runner and the help call: Flags declares
// them on a FlagSet for the help, and Run declares them through the same
// function to read them.
type Command[E any] struct {
	Name     string   // as typed: "serve", "provider create"
	Args     string   // positional arguments, such as "SLUG"
	Required []string // flags it does not run without, named first and without brackets
	Summary  string   // one line of the program's --help
	About    string   // what PROGRAM COMMAND --help says below its synopsis
	Flags    func(E, *flag.FlagSet)
	Run      func(E, context.Context, []string) error
}

// List is a program's commands, in the order its help lists them.
type List[E any] struct {
	Program  string
	Commands []Command[E]
	// Blank is the environment the help declares flags in, so that it
	// shows their defaults as built, not the environment's.
	Blank E
	// Metavars name the value of flags, by flag name, whose default does
	// not show what to give.
	Metavars map[string]string
}

// Lookup finds a command by the name typed.
func (l List[E]) Lookup(name string) (Command[E], bool) {
	for _, c := range l.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command[E]{}, false
}

// IsGroup reports whether name is the first word of commands with a
// subcommand ("provider" of "provider create").
func (l List[E]) IsGroup(name string) bool {
	for _, c := range l.Commands {
		if strings.HasPrefix(c.Name, name+" ") {
			return true
		}
	}
	return false
}

// IsHelp reports whether arg asks for help in place of a command or subcommand.
func IsHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "help" }

// FlagSet returns the FlagSet of the command named, for its runner to
// declare its flags on: it prints the command's usage (its synopsis, built
// from the same flags, and what it does) to stderr and reports errors
// instead of exiting.
func (l List[E]) FlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		c, _ := l.Lookup(name)
		prefix := "Usage: " + l.Program + " "
		fmt.Fprintf(stderr, "%s%s\n\n%s\n\n", prefix, l.Synopsis(c, strings.Repeat(" ", len(prefix))), c.About)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses flags, hands what aliases were given to the flags they
// stand for (Alias) and rejects stray arguments.
func Parse(fs *flag.FlagSet, args []string, positional int) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := resolveAliases(fs); err != nil {
		return nil, err
	}
	if fs.NArg() != positional {
		fs.Usage()
		return nil, fmt.Errorf("%s: expected %d argument(s), got %d", fs.Name(), positional, fs.NArg())
	}
	return fs.Args(), nil
}

// synopsisWidth is where the help wraps a synopsis.
const synopsisWidth = 100

// Synopsis is c's usage line after the program's name, built by visiting
// the flags its Flags function declares: the positional arguments, the
// required flags in c.Required's order, then the others in [brackets] by
// name. It is wrapped at synopsisWidth, continuation lines indented by
// indent plus the command's name.
func (l List[E]) Synopsis(c Command[E], indent string) string {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	c.Flags(l.Blank, fs)
	words := []string{c.Name}
	if c.Args != "" {
		words = append(words, c.Args)
	}
	for _, name := range c.Required {
		if f := fs.Lookup(name); f != nil {
			words = append(words, l.flagWord(f))
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if IsAlias(f) {
			return
		}
		for _, name := range c.Required {
			if f.Name == name {
				return
			}
		}
		words = append(words, "["+l.flagWord(f)+"]")
	})
	lines, line := []string{}, words[0]
	for _, w := range words[1:] {
		if len(indent)+len(line)+1+len(w) > synopsisWidth && strings.TrimSpace(line) != c.Name {
			lines = append(lines, line)
			line = strings.Repeat(" ", len(c.Name)+1) + w
			continue
		}
		line += " " + w
	}
	lines = append(lines, line)
	return strings.Join(lines, "\n"+indent)
}

// Usage is PROGRAM --help: intro, every command's synopsis and summary,
// then outro.
func (l List[E]) Usage(intro, outro string) string {
	var b strings.Builder
	b.WriteString(intro)
	b.WriteString("\nUsage:\n")
	l.writeSynopses(&b, l.Commands)
	b.WriteString(outro)
	fmt.Fprintf(&b, "\nRun \"%s COMMAND --help\" for a command's flags.\n", l.Program)
	return b.String()
}

// GroupUsage is PROGRAM GROUP --help: the synopses of its subcommands.
func (l List[E]) GroupUsage(group string) string {
	var in []Command[E]
	for _, c := range l.Commands {
		if strings.HasPrefix(c.Name, group+" ") {
			in = append(in, c)
		}
	}
	var b strings.Builder
	b.WriteString("Usage:\n")
	l.writeSynopses(&b, in)
	fmt.Fprintf(&b, "\nRun \"%s %s COMMAND --help\" for a command's flags.\n", l.Program, group)
	return b.String()
}

func (l List[E]) writeSynopses(b *strings.Builder, cs []Command[E]) {
	indent := "  " + l.Program + " "
	for _, c := range cs {
		fmt.Fprintf(b, "%s%s\n      %s\n", indent, l.Synopsis(c, strings.Repeat(" ", len(indent))), c.Summary)
	}
}

// flagWord is "--name VALUE", or "--name" for a boolean flag.
func (l List[E]) flagWord(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "--" + f.Name
	}
	return "--" + f.Name + " " + l.metavar(f)
}

// metavar is what a synopsis shows as f's value: the one its value names,
// its metavar, else its default, else its name in capitals.
func (l List[E]) metavar(f *flag.Flag) string {
	if m, ok := f.Value.(interface{ Metavar() string }); ok {
		return m.Metavar()
	}
	if m, ok := l.Metavars[f.Name]; ok {
		return m
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if d, ok := g.Get().(time.Duration); ok && d != 0 {
			return domain.FormatDuration(d)
		}
	}
	if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" {
		return f.DefValue
	}
	return strings.ToUpper(f.Name)
}
