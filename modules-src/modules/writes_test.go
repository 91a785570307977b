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

// TestNodeWritesOnlyThroughHost (issue 23 §2): the runtime counts the
// writes each change sends, so that one that sent a write can never end
// "nothing was changed"; the counter is fed by pveapi's Dispatch and by
// host's file writes and runners, and by nothing else. A module that
// imported the counter could forget a write, and one that started a
// process (os/exec) or wrote a file with os itself would write uncounted:
// this scan of every module's non-test sources fails on either. The test
// module gopvetest (build tag gopve_testmodule, never shipped: it manages
// plain files and starts a child process to test the runtime itself) is
// exempt from all but the counter rule. The same holds for the cost counter
// (internal/cost) that make bench prints: os/exec outside host would start
// processes it never counts.
func TestNodeWritesOnlyThroughHost(t *testing.T) {
	forbidden := map[string]string{
		"github.com/gopve/proxmox/modules-src/internal/writes": "is the runtime's write counter: a module must not note, forget or undo writes",
		"github.com/gopve/proxmox/modules-src/internal/cost":   "is the runtime's cost counter (issue 24 §3): only host and pveapi note processes and requests",
		"os/exec": "starts processes uncounted: run commands through a host.Runner",
	}
	osWrites := map[string]bool{"WriteFile": true, "Remove": true, "RemoveAll": true, "Rename": true, "Create": true, "OpenFile": true,
		"Mkdir": true, "MkdirAll": true, "Chmod": true, "Chown": true, "Lchown": true, "Symlink": true, "Link": true, "Truncate": true}
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
		osName := ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			testModule := strings.HasPrefix(path, "gopvetest"+string(filepath.Separator))
			if why, bad := forbidden[p]; bad && !(testModule && p == "os/exec") {
				t.Errorf("%s imports %s, which %s", path, p, why)
			}
			if p == "os" {
				osName = "os"
				if imp.Name != nil {
					osName = imp.Name.Name
				}
			}
		}
		if osName == "" || strings.HasPrefix(path, "gopvetest"+string(filepath.Separator)) {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, _ := sel.X.(*ast.Ident); x != nil && x.Name == osName && osWrites[sel.Sel.Name] {
				t.Errorf("%s: os.%s writes the node uncounted: write through host.Root (ApplyFile, Remove, WriteInPlace)", fset.Position(sel.Pos()), sel.Sel.Name)
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
