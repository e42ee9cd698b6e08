package flagdoc

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// PrintOptions writes every option of fs, sorted by name, as
// "  --name VALUE" followed by its indented description and non-zero
// default: flag.PrintDefaults with the double dash operators type.
func PrintOptions(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		var b strings.Builder
		fmt.Fprintf(&b, "  --%s", f.Name)
		name, text := flag.UnquoteUsage(f)
		if t, ok := f.Value.(interface{ Type() string }); ok && name == "value" {
			name = t.Type()
		}
		if name != "" {
			b.WriteString(" " + name)
		}
		b.WriteString("\n    \t")
		b.WriteString(strings.ReplaceAll(text, "\n", "\n    \t"))
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "0s" {
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				def = fmt.Sprintf("%q", def) // as flag.PrintDefaults quotes strings
			}
			fmt.Fprintf(&b, " (default %s)", def)
		}
		b.WriteByte('\n')
		io.WriteString(w, b.String())
	})
}
