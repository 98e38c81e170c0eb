package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// runbookBase is where every alert's runbook_url points.
const runbookBase = "https://github.com/dbxtop/dbxtop/blob/main/docs/runbooks/"

// exported is every series name serve exports under dbxtop_.
func exported() map[string]bool {
	known := map[string]bool{}
	for _, g := range gauges {
		known[g.name] = true
	}
	for _, g := range clientGauges {
		known[g.name] = true
	}
	descs := make(chan *prometheus.Desc, 64)
	NewCounters().Describe(descs)
	buildInfo("", "").Describe(descs)
	newProxiedCollector(nil).Describe(descs)
	close(descs)
	name := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range descs {
		if m := name.FindStringSubmatch(d.String()); m != nil {
			known[m[1]] = true
		}
	}
	return known
}

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

	known := exported()
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

// TestEveryAlertCarriesAWorkspace: Alertmanager groups by workspace, so
// every alert the promtool tests expect is labelled with one (an alert
// without it would share a group {} with every other such alert and wait
// on its interval).
func TestEveryAlertCarriesAWorkspace(t *testing.T) {
	b, err := os.ReadFile("../docs/alerts/dbxtop.rules.test.yml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "- exp_labels:") {
			n++
			if !regexp.MustCompile(`[{ ]workspace: [a-z]`).MatchString(l) {
				t.Errorf("an expected alert has no workspace: %s", l)
			}
		}
	}
	if n < 19 {
		t.Errorf("%d expected alerts in the promtool tests: every alert should have one", n)
	}
}

// TestDashboardMatchesServe: the Grafana dashboard (contrib/grafana)
// queries only series serve exports, through its datasource variable,
// with the workspace variable on every dbxtop_ selector. e2e's alerting
// test runs every query against a real Prometheus.
func TestDashboardMatchesServe(t *testing.T) {
	b, err := os.ReadFile("../contrib/grafana/dbxtop.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	known := exported()
	n := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		n++
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %q, %d queries", p.Title, p.Datasource.UID, len(p.Targets))
		}
		for _, tg := range p.Targets {
			for _, m := range regexp.MustCompile(`\bdbxtop_[a-z_]+\b`).FindAllString(tg.Expr, -1) {
				if !known[m] {
					t.Errorf("panel %q queries %s, which serve does not export", p.Title, m)
				}
				if m != "dbxtop_build_info" && !strings.Contains(tg.Expr, m+`{workspace=~"$workspace"}`) {
					t.Errorf("panel %q: %s without the workspace variable: %s", p.Title, m, tg.Expr)
				}
			}
		}
	}
	if n < 12 {
		t.Errorf("%d panels", n)
	}
}
