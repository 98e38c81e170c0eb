package cmd

import "testing"

// TestWorkspaceLabelIsNeverEmpty: the context's name, else the host's name
// from the resolved URL (a profile from the environment leaves ws.Host
// empty), else the flag's host.
func TestWorkspaceLabelIsNeverEmpty(t *testing.T) {
	for _, tc := range []struct {
		t        target
		resolved string
		want     string
	}{
		{target{name: "prod", ws: WorkspaceConfig{Host: "https://adb-1.2.azuredatabricks.net"}}, "https://adb-1.2.azuredatabricks.net", "prod"},
		{target{}, "https://adb-1.2.azuredatabricks.net", "adb-1.2.azuredatabricks.net"},
		{target{}, "http://127.0.0.1:8080", "127.0.0.1:8080"},
		{target{ws: WorkspaceConfig{Host: "adb-3.4.azuredatabricks.net"}}, "", "adb-3.4.azuredatabricks.net"},
		{target{}, "", "default"},
	} {
		if got := tc.t.label(tc.resolved); got != tc.want {
			t.Errorf("label(%+v, %q) = %q, want %q", tc.t.name, tc.resolved, got, tc.want)
		}
	}
}
