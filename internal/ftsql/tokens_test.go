package ftsql

import (
	"strings"
	"testing"
)

func TestRoutingPredicates(t *testing.T) {
	if !TrigramRouteOK("广西桂林") || TrigramRouteOK("广西 OR 桂林") || TrigramRouteOK("桂") {
		t.Error("TrigramRouteOK")
	}
	if !HasLoneCJKRun("a桂b") || HasLoneCJKRun("桂林") {
		t.Error("HasLoneCJKRun")
	}
	if got := QuoteTokens(`a "b OR c`); got != `"a" """b" OR "c"` {
		t.Errorf("QuoteTokens = %q", got)
	}
	if !TrigramEligible(`"youer"`) || TrigramEligible("yo") {
		t.Error("TrigramEligible")
	}
	terms, ok := QueryTerms("修改youer服务端")
	if !ok || strings.Join(terms, ",") != "修改,服务,务端" {
		t.Errorf("QueryTerms = %v %v", terms, ok)
	}
	if _, ok := QueryTerms("youer"); ok {
		t.Error("QueryTerms of Latin must not be servable")
	}
	if got := strings.Join(CJKTerms("桂林a桂"), ","); got != "林,桂,桂林" {
		t.Errorf("CJKTerms = %q", got)
	}
	if got := LikeTokens(`a "b c" "" d"e`); strings.Join(got, "|") != `a|"b c"|""|d"e` {
		t.Errorf("LikeTokens = %q", got)
	}
}
