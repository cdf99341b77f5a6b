package audit

import (
	"slices"
	"testing"
	"unicode/utf16"
)

// TestCompareUTF16 checks the allocation-free order against the definition
// (encode both to UTF-16, compare the units), including the case where
// UTF-16 order and UTF-8 byte order differ (U+FF61 comes before U+1F600 in
// UTF-8 and after it in UTF-16) and invalid UTF-8.
func TestCompareUTF16(t *testing.T) {
	want := func(a, b string) int {
		return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
	}
	keys := []string{"", "a", "ab", "b", "toolUseId", "toolUse", "\u00e9", "\uff61", "\U0001f600", "\U0001f601", "\U00010000",
		"a\U0001f600", "a\uffff", "\xff", "\xffa", "a\xff", "\ufffd", "\ud7ff", "\ue000", "\U0010ffff"}
	for _, a := range keys {
		for _, b := range keys {
			if got, w := compareUTF16(a, b), want(a, b); got != w {
				t.Errorf("compareUTF16(%q, %q) = %d, want %d", a, b, got, w)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { compareUTF16("toolUseId\U0001f600", "toolUseId\uff61") }); n != 0 {
		t.Errorf("compareUTF16 allocates %v times", n)
	}
}
