package chromiumtest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDialogsAreSeen is the harness's positive control: a page that
// does run a script and opens an alert is seen doing so, so a test that
// finds no dialog found none because none opened.
func TestDialogsAreSeen(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html><title>x</title><p id=p>before</p><script>alert("hi"); document.getElementById("p").textContent = "after"</script>`))
	}))
	defer srv.Close()
	tab := NewTab(t, Browser(t), 60*time.Second)
	tab.Do(t, chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.CSS("#p")))
	deadline := time.Now().Add(10 * time.Second)
	for Eval[string](t, tab, `document.getElementById("p").textContent`) != "after" {
		if time.Now().After(deadline) {
			t.Fatal("the page's script did not finish: its alert was never dismissed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d := tab.Dialogs(); len(d) != 1 || d[0] != "alert: hi" {
		t.Fatalf("dialogs = %q, want one alert", d)
	}
}
