package modules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWritesOnlyThroughDispatch (issue 16): a module reaches the PVE API
// only through pveapi's client, whose one write is Dispatch, and calls it
// through pveansible.Dispatch (warnings for settled lost answers,
// NothingChanged only when PVE or a read proved it). A module that builds
// its own HTTP requests, imports go-proxmox, or calls a client's Dispatch
// directly would bypass the send-once rule; this scan of every module's
// non-test sources fails on it.
func TestWritesOnlyThroughDispatch(t *testing.T) {
	forbiddenImports := map[string]string{
		"github.com/luthermonson/go-proxmox": "talks to PVE without pveapi",
		"net/http/httputil":                  "builds raw requests",
	}
	// Identifiers of net/http a module may use: method names for Write.
	allowedHTTP := map[string]bool{"MethodPost": true, "MethodPut": true, "MethodDelete": true, "MethodGet": true}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		httpName, ansName := "", ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if why, bad := forbiddenImports[p]; bad {
				t.Errorf("%s imports %s, which %s", path, p, why)
			}
			name := filepath.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			switch p {
			case "net/http":
				httpName = name
			case "github.com/gopve/proxmox/modules-src/pveapi/pveansible":
				ansName = name
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, _ := sel.X.(*ast.Ident)
			if x != nil && httpName != "" && x.Name == httpName && !allowedHTTP[sel.Sel.Name] {
				t.Errorf("%s: uses http.%s; a module sends API requests only through pveapi (Get, pveansible.Dispatch)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			if sel.Sel.Name == "Dispatch" && (x == nil || x.Name != ansName) {
				t.Errorf("%s: calls Dispatch on something other than pveansible: use pveansible.Dispatch(ctx, r, client, write)", fset.Position(sel.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("scanned only %d files: the walk did not find the modules", files)
	}
}
