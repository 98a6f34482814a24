package pyrepr

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode"
)

// python3 returns the path of python3, or skips (fails under CI) without it.
func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 is missing: the repr() comparisons need it")
		}
		t.Skip("python3 is missing: install it to compare with Python's repr()")
	}
	return p
}

// runPython runs src with python3, stdin in, and returns its stdout.
func runPython(t *testing.T, src string, in []byte) []byte {
	t.Helper()
	cmd := exec.Command(python3(t), "-c", src)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	return out
}

// TestUnicodeVersion: added15 and Stable are written against Go's Unicode
// 15.0 tables; a Go release with other tables needs them re-derived.
func TestUnicodeVersion(t *testing.T) {
	if unicode.Version != UnicodeVersion {
		t.Fatalf("Go's unicode tables are %s, pyrepr's table of additions is for %s: re-derive added15 (TestAdded15MatchesPython)", unicode.Version, UnicodeVersion)
	}
}

// TestStableCharactersPrintAsInPython: for every code point Stable calls
// stable, Go's unicode.IsPrint agrees with the running Python's
// str.isprintable(); under Python 3.11 (Unicode 14.0) the unstable assigned
// ones are exactly added15.
func TestStableCharactersPrintAsInPython(t *testing.T) {
	out := runPython(t, `
import sys, unicodedata
sys.stdout.write(unicodedata.unidata_version + "\n")
sys.stdout.write("".join(("1" if chr(c).isprintable() else "0") + ("0" if unicodedata.category(chr(c)) == "Cn" else "1") for c in range(0x110000)))
`, nil)
	version, bits, _ := strings.Cut(string(out), "\n")
	if len(bits) != 2*0x110000 {
		t.Fatalf("python3 printed %d flags", len(bits))
	}
	for r := rune(0); r <= 0x10ffff; r++ {
		pyPrint, pyAssigned := bits[2*r] == '1', bits[2*r+1] == '1'
		if Stable(r) && (r < 0xd800 || r > 0xdfff) && unicode.IsPrint(r) != pyPrint {
			t.Fatalf("U+%04X: Go IsPrint %v, Python %s isprintable %v", r, unicode.IsPrint(r), version, pyPrint)
		}
		if version == "14.0.0" {
			inAdded := false
			for _, a := range added15 {
				inAdded = inAdded || (r >= a[0] && r <= a[1])
			}
			if inAdded != (assigned(r) && !pyAssigned) {
				t.Fatalf("U+%04X: in added15 %v, assigned in Go %v, in Python 3.11 %v", r, inAdded, assigned(r), pyAssigned)
			}
		}
	}
	t.Logf("compared with Python's Unicode %s", version)
}

// TestStrAndFloatMatchPython compares Str, Float and Tuple with Python's
// repr() on strings drawn from every kind of character (controls, quotes,
// backslashes, Latin-1, format and space characters, CJK, emoji, private
// use) and on floats of every magnitude.
func TestStrAndFloatMatchPython(t *testing.T) {
	pool := []rune{'a', 'Z', ' ', '\'', '"', '\\', '\t', '\n', '\r', 0, 1, 0x1b, 0x7f, 0x80, 0x9f, 0xa0, 0xad, 0xe9, 0xff,
		0x100, 0x2028, 0x2029, 0x200b, 0x202e, 0x3000, 0x4e16, 0x754c, 0xfeff, 0xe000, 0xfffd, 0xfdd0, 0xffff,
		0x1f680, 0x1f468, 0x200d, 0x10ffff, 0xf0000, 0x2a6d6, 0x1d11e, 0x1fa75, 0xe0080}
	rnd := rand.New(rand.NewPCG(20, 4))
	var strs []string
	strs = append(strs, "", "héllo 世界 🚀", "it's", `say "hi"`, `both ' and "`, "\x00json:[{\"type\": \"text\"}]")
	for i := 0; i < 400; i++ {
		var b strings.Builder
		for j := rnd.IntN(12); j >= 0; j-- {
			b.WriteRune(pool[rnd.IntN(len(pool))])
		}
		strs = append(strs, b.String())
	}
	floats := []float64{0, 1, -1, 0.1, 1767000000.0, 1767000000.5, 1767604502.125, 1e16, 1e15, 123456789012345678, 1e-4, 1e-5, 0.00012345,
		1.5e-7, 2.5e300, 5e-324, math.MaxFloat64, 1.0 / 3, 100, 1e22, -0.5}
	for i := 0; i < 400; i++ {
		floats = append(floats, math.Float64frombits(rnd.Uint64()))
		floats = append(floats, 1.6e9+rnd.Float64()*2e8)
	}
	var fl []float64
	for _, f := range floats {
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			fl = append(fl, f)
		}
	}
	in, err := json.Marshal(map[string]any{"s": strs, "f": fl})
	if err != nil {
		t.Fatal(err)
	}
	out := runPython(t, `
import sys, json
d = json.load(sys.stdin)
json.dump({"s": [repr(s) for s in d["s"]], "f": [repr(float(f)) for f in d["f"]],
           "t": [repr((s, float(f), None)) for s, f in zip(d["s"], d["f"])]}, sys.stdout)
`, in)
	var want struct{ S, F, T []string }
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i, s := range strs {
		got, ok := Str(s)
		if !ok {
			refused++
			continue
		}
		if got != want.S[i] {
			t.Errorf("Str(%q) = %s, Python %s", s, got, want.S[i])
		}
		if i < len(fl) {
			if tu := Tuple(got, Float(fl[i]), None); tu != want.T[i] {
				t.Errorf("Tuple = %s, Python %s", tu, want.T[i])
			}
		}
	}
	for i, f := range fl {
		if got := Float(f); got != want.F[i] {
			t.Errorf("Float(%v) = %s, Python %s", f, got, want.F[i])
		}
	}
	if refused == 0 || refused == len(strs) {
		t.Fatalf("%d of %d strings refused: the pool should hold both kinds", refused, len(strs))
	}
}

// TestStrRefusesVersionDependentCharacters: a character Unicode 15.0 added
// (Python 3.11 escapes it, 3.12 does not), one Go's tables leave
// unassigned, and invalid UTF-8 are refused; noncharacters are not.
func TestStrRefusesVersionDependentCharacters(t *testing.T) {
	for _, s := range []string{"love \U0001fa75", "\U00031350", "x\U000e0080", "bad \xff"} {
		if _, ok := Str(s); ok {
			t.Errorf("Str(%q) accepted", s)
		}
	}
	if got, ok := Str("\ufdd0\uffff"); !ok || got != `'\ufdd0\uffff'` {
		t.Errorf("noncharacters: %q %v", got, ok)
	}
}
