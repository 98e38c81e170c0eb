package serve

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// runbookBase is where every alert's runbook_url points.
const runbookBase = "https://github.com/dbxtop/dbxtop/blob/main/docs/runbooks/"

// TestAlertRulesMatchServe: the shipped rules (docs/alerts) use only
// series serve exports, and every alert has a for:, a summary, a
// description and a runbook_url naming its own page in docs/runbooks/,
// which exists. promtool checks the rules' syntax and behaviour (.ci/run);
// this checks what promtool cannot know.
func TestAlertRulesMatchServe(t *testing.T) {
	b, err := os.ReadFile("../docs/alerts/dbxtop.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	rules := string(b)

	known := map[string]bool{}
	for _, g := range gauges {
		known[g.name] = true
	}
	descs := make(chan *prometheus.Desc, 64)
	NewCounters().Describe(descs)
	buildInfo("", "").Describe(descs)
	close(descs)
	name := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range descs {
		if m := name.FindStringSubmatch(d.String()); m != nil {
			known[m[1]] = true
		}
	}
	for _, m := range regexp.MustCompile(`\bdbxtop_[a-z_]+\b`).FindAllString(rules, -1) {
		if !known[m] {
			t.Errorf("the rules use %s, which serve does not export", m)
		}
	}

	blocks := strings.Split(rules, "- alert: ")[1:]
	if len(blocks) < 18 {
		t.Fatalf("%d alerts in the rules", len(blocks))
	}
	for _, blk := range blocks {
		alert := strings.TrimSpace(strings.SplitN(blk, "\n", 2)[0])
		for _, want := range []string{"\n        for: ", "\n          summary: ", "\n          description: ",
			"\n          runbook_url: \"" + runbookBase + alert + ".md\""} {
			if !strings.Contains(blk, want) {
				t.Errorf("%s lacks %q", alert, strings.TrimSpace(want))
			}
		}
		if _, err := os.Stat(filepath.Join("../docs/runbooks", alert+".md")); err != nil {
			t.Errorf("%s: no runbook page: %v", alert, err)
		}
		if strings.Contains(blk, "job=") {
			t.Errorf("%s names a scrape job", alert)
		}
	}
}
