// Package version tells which pgq a binary was built from: the module's version when
// it was built as a dependency or from a tagged module, else "(devel)", with the VCS
// revision the Go toolchain stamped (and "+dirty" for uncommitted changes).
package version

import "runtime/debug"

// module is pgq's module path.
const module = "github.com/pgq-dev/pgq"

// String returns pgq's version, e.g. "v1.4.0" or "(devel) 27b7a35+dirty".
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	if info.Main.Path != module {
		v = "(unknown)"
		for _, d := range info.Deps {
			if d.Path == module {
				v = d.Version
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "(devel)"
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.modified" && s.Value == "true" {
				v += "+dirty"
			}
		}
	}
	return v
}
