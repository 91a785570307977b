package truth

// Pitfall coverage: every trap of design/pitfalls.md (B1…H8) must be cited
// by at least one test function of the repository that is not skipped —
// in its name (TestK16…), a comment in or above it or at the head of its
// file, a failure message, or in a helper of
// the same package it calls (testPlaybook's comments speak for
// TestLabPlaybookPVE9). The table ID → tests is printed; an uncited ID
// fails the test, listed.
//
// The IDs come from testdata/pitfall-ids.txt, a copy of the shared file's
// list (the repository is built and tested without ../shared beside it,
// as pveschema carries its copy of the API schema);
// TestPitfallCopyMatchesShared compares the copy with the shared file when
// it is there.

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
)

// pitfallIDs reads testdata/pitfall-ids.txt.
func pitfallIDs(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "pitfall-ids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			ids = append(ids, line)
		}
	}
	if len(ids) < 40 {
		t.Fatalf("only %d pitfall IDs read: the copy is damaged", len(ids))
	}
	return ids
}

// sharedPitfallIDs is the ID list of pitfalls.md ("- **B1** …" items).
var sharedItem = regexp.MustCompile(`(?m)^- \*\*([A-Z]+[0-9]+)\*\*`)

func TestPitfallCopyMatchesShared(t *testing.T) {
	repo, err := labctl.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("GOPVE_SHARED_DIR")
	if dir == "" {
		dir = filepath.Join(repo, "..", "shared")
	}
	b, err := os.ReadFile(filepath.Join(dir, "design", "pitfalls.md"))
	if err != nil {
		// Not a skip: the copy is what the coverage test uses, and this
		// check has nothing to compare it with here.
		t.Logf("no shared pitfalls.md to compare the copy with (%v); set GOPVE_SHARED_DIR", err)
		return
	}
	var shared []string
	for _, m := range sharedItem.FindAllStringSubmatch(string(b), -1) {
		shared = append(shared, m[1])
	}
	if copied := pitfallIDs(t); !slices.Equal(copied, shared) {
		t.Errorf("testdata/pitfall-ids.txt differs from %s:\ncopy:   %v\nshared: %v", dir, copied, shared)
	}
}

// testFunc is one test of the repository with what it cites.
type testFunc struct {
	pkg, name string
	cites     map[string]bool
	calls     []string // package-level functions it calls (same package)
	skipped   bool     // an unconditional skip at the top of its body
}

// citeRe finds pitfall IDs in text: a letter of the sections and a number,
// not inside a longer word or number (so "PVE9", "S3cr3t" and "H264" are
// not citations; "TestLabK16MAC" is, through nameCiteRe).
var (
	citeRe     = regexp.MustCompile(`(?:^|[^A-Za-z0-9])([BZCSKH][0-9]{1,2})(?:[^0-9A-Za-z]|$)`)
	nameCiteRe = regexp.MustCompile(`([BZCSKH][0-9]{1,2})(?:[^0-9a-z]|$)`)
)

func cited(text string, re *regexp.Regexp, into map[string]bool) {
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		into[m[1]] = true
	}
}

// repoTests parses every _test.go file under root: each package's Test
// functions and the test helpers they may call, with their citations.
func repoTests(t *testing.T, root string) (tests []*testFunc, helpers map[string]*testFunc) {
	t.Helper()
	helpers = map[string]*testFunc{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		// Only test code: a production comment naming a pitfall proves nothing.
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		pkg := filepath.Dir(p)
		// A file's header comment (above its first function) describes
		// the tests of the file: it speaks for each of them.
		header := map[string]bool{}
		for _, c := range f.Comments {
			if first := firstFunc(f); first == token.NoPos || c.End() < first {
				cited(c.Text(), citeRe, header)
			}
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil {
				continue
			}
			tf := &testFunc{pkg: pkg, name: fn.Name.Name, cites: map[string]bool{}}
			if fn.Doc != nil {
				cited(fn.Doc.Text(), citeRe, tf.cites)
			}
			for _, c := range f.Comments {
				if c.Pos() >= fn.Body.Lbrace && c.End() <= fn.Body.Rbrace {
					cited(c.Text(), citeRe, tf.cites)
				}
			}
			// Failure messages cite IDs too ("C7: the shared …").
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.BasicLit:
					if x.Kind == token.STRING {
						cited(x.Value, citeRe, tf.cites)
					}
				case *ast.CallExpr:
					if id, ok := x.Fun.(*ast.Ident); ok {
						tf.calls = append(tf.calls, id.Name)
					}
				}
				return true
			})
			tf.skipped = skipsAtTop(fn.Body)
			isTest := strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain"
			if isTest {
				cited(strings.TrimPrefix(fn.Name.Name, "Test"), nameCiteRe, tf.cites)
				for id := range header {
					tf.cites[id] = true
				}
				tests = append(tests, tf)
			} else {
				helpers[pkg+"."+fn.Name.Name] = tf
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tests, helpers
}

// firstFunc is where the file's first function starts (NoPos: none).
func firstFunc(f *ast.File) token.Pos {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok {
			if fn.Doc != nil {
				return fn.Doc.Pos()
			}
			return fn.Pos()
		}
	}
	return token.NoPos
}

// skipsAtTop: a statement of the body itself (not inside an if) that
// skips: the test can never run.
func skipsAtTop(body *ast.BlockStmt) bool {
	for _, st := range body.List {
		es, ok := st.(*ast.ExprStmt)
		if !ok {
			continue
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok {
			continue
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && slices.Contains([]string{"Skip", "Skipf", "SkipNow"}, sel.Sel.Name) {
			return true
		}
	}
	return false
}

// allCites is what a test cites, with the helpers it calls (transitively,
// same package) — skipped helpers' citations do not count, nor those of a
// test that skips.
func allCites(tf *testFunc, helpers map[string]*testFunc) map[string]bool {
	out := map[string]bool{}
	seen := map[string]bool{}
	var walk func(f *testFunc)
	walk = func(f *testFunc) {
		if f.skipped {
			return
		}
		for id := range f.cites {
			out[id] = true
		}
		for _, c := range f.calls {
			key := f.pkg + "." + c
			if h := helpers[key]; h != nil && !seen[key] {
				seen[key] = true
				walk(h)
			}
		}
	}
	walk(tf)
	return out
}

func TestEveryPitfallIsCitedByATest(t *testing.T) {
	repo, err := labctl.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ids := pitfallIDs(t)
	tests, helpers := repoTests(t, filepath.Join(repo, "modules-src"))
	byID := map[string][]string{}
	for _, tf := range tests {
		for id := range allCites(tf, helpers) {
			rel, _ := filepath.Rel(filepath.Join(repo, "modules-src"), tf.pkg)
			byID[id] = append(byID[id], rel+"."+tf.name)
		}
	}
	// The search must be able to miss: an ID of no section is cited by
	// nothing, and a test citing everything would be a broken parser.
	// (Spelt in two parts, so that this test does not cite it.)
	if none := "Z" + "99"; len(byID[none]) > 0 {
		t.Fatalf("%s, no pitfall, is cited by %v: the citation search matches too much", none, byID[none])
	}
	var table strings.Builder
	var uncited, labOnly []string
	for _, id := range ids {
		names := byID[id]
		slices.Sort(names)
		if len(names) == 0 {
			uncited = append(uncited, id)
		}
		// Both obligations: the lab reproduces it (lab/…), code of the
		// collection handles it (modules/, pveapi/, host/).
		if len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, "lab/") && !strings.HasPrefix(n, "cmd/") }) {
			labOnly = append(labOnly, id)
		}
		shown := names
		if len(shown) > 4 {
			shown = append(shown[:4:4], fmt.Sprintf("… %d more", len(names)-4))
		}
		fmt.Fprintf(&table, "%-4s %2d  %s\n", id, len(names), strings.Join(shown, ", "))
	}
	t.Logf("pitfall → tests citing it (not skipped):\n%s", table.String())
	if len(labOnly) > 0 {
		t.Logf("cited only by lab tests (no module, pveapi or host test names them): %s", strings.Join(labOnly, " "))
	}
	if len(uncited) > 0 {
		t.Errorf("pitfalls no test cites: %s", strings.Join(uncited, " "))
	}
}

// README's pitfall table agrees with the tests: every pitfall has a row
// (ranges such as Z1–Z6 included), and every test a row names exists, is
// not skipped, and cites one of the row's IDs (itself or through its
// helpers), so the table's claim is the test's own.
func TestReadmePitfallTableMatchesTests(t *testing.T) {
	repo, err := labctl.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests, helpers := repoTests(t, filepath.Join(repo, "modules-src"))
	byName := map[string][]*testFunc{}
	for _, tf := range tests {
		byName[tf.name] = append(byName[tf.name], tf)
	}
	rowIDs := regexp.MustCompile(`([BZCSKH])([0-9]{1,2})(?:\s*[–-]\s*[BZCSKH]?([0-9]{1,2}))?`)
	testName := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`")
	inTable := map[string]bool{}
	rows := 0
	for _, line := range strings.Split(string(readme), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !regexp.MustCompile(`^\s*[BZCSKH][0-9]`).MatchString(cells[1]) {
			continue
		}
		rows++
		ids := map[string]bool{}
		for _, m := range rowIDs.FindAllStringSubmatch(cells[1], -1) {
			lo := atoi(m[2])
			hi := lo
			if m[3] != "" {
				hi = atoi(m[3])
			}
			for n := lo; n <= hi; n++ {
				ids[fmt.Sprintf("%s%d", m[1], n)] = true
			}
		}
		for id := range ids {
			inTable[id] = true
		}
		for _, m := range testName.FindAllStringSubmatch(line, -1) {
			fns := byName[m[1]]
			if len(fns) == 0 {
				t.Errorf("README row %s names %s: no such test", strings.TrimSpace(cells[1]), m[1])
				continue
			}
			ok := false
			for _, tf := range fns {
				for id := range allCites(tf, helpers) {
					ok = ok || ids[id]
				}
			}
			if !ok {
				t.Errorf("README row %s names %s, which cites none of its IDs (or is skipped)", strings.TrimSpace(cells[1]), m[1])
			}
		}
	}
	if rows < 20 {
		t.Fatalf("only %d pitfall rows found in README.md: the table's format changed", rows)
	}
	var missing []string
	for _, id := range pitfallIDs(t) {
		if !inTable[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Errorf("README's pitfall table has no row for %s", strings.Join(missing, " "))
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
