package cli

import (
	"flag"
	"fmt"

	"github.com/tidemark/tidemark/domain"
)

// alias is a flag's other name: what it is given is held apart until
// Parse, which hands it to the flag it stands for, so that both names
// given with different values can be refused rather than one silently
// winning.
type alias struct {
	of    string // the flag it stands for
	value string
	set   bool
	bool  bool // the flag it stands for is a boolean: -v, not -v true
}

func (a *alias) String() string     { return a.value }
func (a *alias) Set(s string) error { a.value, a.set = s, true; return nil }
func (a *alias) IsBoolFlag() bool   { return a.bool }

// Alias declares name as another name of the flag of, declared before on
// fs. The synopses show only of; the flag's help describes name as its
// alias.
func Alias(fs *flag.FlagSet, name, of string) {
	f := fs.Lookup(of)
	if f == nil {
		panic("cli.Alias: no flag " + of)
	}
	a := &alias{of: of}
	usage := "alias of --" + of
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		a.bool = true
	} else {
		// The backquotes name the value in the flag's help: -name NAME.
		usage = "`" + metavarOf(f) + "`: " + usage
	}
	fs.Var(a, name, usage)
}

// metavarOf is the value's name the help of f's alias shows.
func metavarOf(f *flag.Flag) string {
	if name, _ := flag.UnquoteUsage(f); name != "" && name != "string" && name != "value" {
		return name
	}
	return "NAME"
}

// IsAlias reports whether f is another name of a flag (Alias).
func IsAlias(f *flag.Flag) bool {
	_, ok := f.Value.(*alias)
	return ok
}

// resolveAliases hands what each alias given was given to the flag it
// stands for; both given with different values is refused (EINVALID).
func resolveAliases(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.Visit(func(f *flag.Flag) {
		a, ok := f.Value.(*alias)
		if !ok || err != nil {
			return
		}
		target := fs.Lookup(a.of)
		if given[a.of] {
			if target.Value.String() != a.value {
				err = Refused("%s: --%s %q and --%s %q (its alias) differ: give one", fs.Name(), a.of, target.Value.String(), f.Name, a.value)
			}
			return
		}
		if e := target.Value.Set(a.value); e != nil {
			err = fmt.Errorf("invalid value %q for flag --%s: %w", a.value, f.Name, e)
		}
	})
	return err
}

// refused is an error the user is to fix: main prints its message alone
// and exits 2 for it (domain.EINVALID).
type refused struct{ err *domain.Error }

func (r refused) Error() string { return r.err.Message }
func (r refused) Unwrap() error { return r.err }

// Refused is a command line refused as given (exit status 2), saying why.
func Refused(format string, args ...any) error {
	return refused{domain.Errorf(domain.EINVALID, format, args...)}
}
