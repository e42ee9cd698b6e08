package nichealthd_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// listedPackage is what `go list -export -json` says of one package.
type listedPackage struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	// CgoFiles are type-checked with "C" faked (nichealth-mad's calls
	// into libibumad and libibmad).
	CgoFiles []string
}

// TestNoTypedNilIntoInterface fails on the class of bug that crashed the
// daemon at start on real RoCE hosts: a function whose result is an
// interface returning a concrete pointer (or map, slice, func, chan) that
// may be nil, which the caller then sees as a non-nil interface and calls a
// method on. ethtool.OpenSource did `return Open(...)`: a nil *Stats inside a
// non-nil Source, and daemon/phy.go closed it. Neither nilaway nor
// staticcheck reports that forwarding (the caller's nil test looks like a
// guard to them), so this test does, over every non-test file of the
// module but generated code (type-checked from source against the build's
// export data):
//
//   - `return f(...)` where f's result i is such a concrete type and the
//     enclosing function's result i an interface;
//   - `return p, err` where p is such a concrete variable converted to an
//     interface result while an error result is not the literal nil (the
//     caller is told to look at err, and gets a non-nil interface too).
//
// Return a plain nil interface instead: `if err != nil { return nil, err }`.
func TestNoTypedNilIntoInterface(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Dir,Export,GoFiles,CgoFiles", "./...").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	var ours []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath, module) || p.ImportPath == strings.TrimSuffix(module, "/") {
			ours = append(ours, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var found []string
	checked := 0
	for _, p := range ours {
		if len(p.GoFiles)+len(p.CgoFiles) == 0 {
			continue
		}
		var files []*ast.File
		for _, name := range append(append([]string{}, p.GoFiles...), p.CgoFiles...) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp, FakeImportC: len(p.CgoFiles) > 0}
		if len(p.CgoFiles) > 0 {
			// With "C" faked, what a C call returns has no type: those
			// errors are the fake's, not the code's (the compiler builds
			// it); the rest is checked as usual.
			conf.Error = func(error) {}
		}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil && len(p.CgoFiles) == 0 {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		checked++
		for _, f := range files {
			if ast.IsGenerated(f) {
				continue // protoc-gen-go-grpc's handlers: not ours to edit
			}
			found = append(found, typedNilReturns(fset, info, f)...)
		}
	}
	if checked < 30 {
		t.Fatalf("only %d packages type-checked", checked)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
}

// typedNilReturns reports the returns of f that may put a nil concrete
// value into an interface result.
func typedNilReturns(fset *token.FileSet, info *types.Info, f *ast.File) []string {
	var out []string
	var sigs []*types.Signature
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body == nil {
				return false
			}
			obj, ok := info.Defs[n.Name].(*types.Func)
			if !ok {
				return false
			}
			sigs = append(sigs, obj.Type().(*types.Signature))
			ast.Inspect(n.Body, visit)
			sigs = sigs[:len(sigs)-1]
			return false
		case *ast.FuncLit:
			sig, ok := info.Types[n].Type.(*types.Signature)
			if !ok {
				return false
			}
			sigs = append(sigs, sig)
			ast.Inspect(n.Body, visit)
			sigs = sigs[:len(sigs)-1]
			return false
		case *ast.ReturnStmt:
			if len(sigs) == 0 {
				return true
			}
			if why := typedNilReturn(info, sigs[len(sigs)-1].Results(), n); why != "" {
				out = append(out, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), why))
			}
		}
		return true
	}
	ast.Inspect(f, visit)
	return out
}

func typedNilReturn(info *types.Info, results *types.Tuple, r *ast.ReturnStmt) string {
	if results.Len() == 0 || len(r.Results) == 0 {
		return ""
	}
	if len(r.Results) == 1 && results.Len() > 1 {
		call, ok := r.Results[0].(*ast.CallExpr)
		if !ok {
			return ""
		}
		got, ok := info.Types[call].Type.(*types.Tuple)
		if !ok || got.Len() != results.Len() {
			return ""
		}
		for i := 0; i < results.Len(); i++ {
			if isInterface(results.At(i).Type()) && nillableConcrete(got.At(i).Type()) {
				return fmt.Sprintf("result %d forwards %s's %s into the interface %s: a nil one becomes a non-nil interface; return a plain nil with the error",
					i, types.ExprString(call.Fun), got.At(i).Type(), results.At(i).Type())
			}
		}
		return ""
	}
	if len(r.Results) != results.Len() {
		return ""
	}
	errNotNil := false
	for i, e := range r.Results {
		if isError(results.At(i).Type()) && !isNilLiteral(info, e) {
			errNotNil = true
		}
	}
	if !errNotNil {
		return ""
	}
	for i, e := range r.Results {
		if !isInterface(results.At(i).Type()) || isError(results.At(i).Type()) {
			continue
		}
		switch e.(type) {
		case *ast.Ident, *ast.SelectorExpr:
		default:
			continue // a literal, &T{}, new() or a call that builds one
		}
		if tv, ok := info.Types[e]; ok && !tv.IsNil() && nillableConcrete(tv.Type) {
			return fmt.Sprintf("result %d returns %s (%s) into the interface %s beside a non-nil error: return a plain nil",
				i, types.ExprString(e), tv.Type, results.At(i).Type())
		}
	}
	return ""
}

func isInterface(t types.Type) bool { return types.IsInterface(t) }

func isError(t types.Type) bool {
	return types.Identical(t, types.Universe.Lookup("error").Type())
}

func isNilLiteral(info *types.Info, e ast.Expr) bool {
	tv, ok := info.Types[e]
	return ok && tv.IsNil()
}

// nillableConcrete reports whether a value of t can be nil without being
// an interface.
func nillableConcrete(t types.Type) bool {
	switch t.Underlying().(type) {
	case *types.Pointer, *types.Map, *types.Slice, *types.Signature, *types.Chan:
		return true
	}
	return false
}
