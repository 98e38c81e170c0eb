package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetCurrentContextFollowsLinks: a config file that is a symbolic
// link (kept in a dotfiles repository) has its target edited; the link
// stays a link. A link that leads nowhere is refused with a line saying
// so.
func TestSetCurrentContextFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "dbxtop.toml")
	if err := os.MkdirAll(filepath.Dir(real), 0o700); err != nil {
		t.Fatal(err)
	}
	const doc = "# mine\ncurrent_context = \"prod\"\n\n[contexts.prod]\nhost = \"https://prod.example.com\"\n\n[contexts.staging]\nhost = \"https://staging.example.com\"\n"
	if err := os.WriteFile(real, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.toml")
	if err := os.Symlink(filepath.Join("dotfiles", "dbxtop.toml"), link); err != nil {
		t.Fatal(err)
	}
	if err := SetCurrentContext(link, "staging"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", st.Mode(), err)
	}
	b, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `current_context = "staging"`) || !strings.HasPrefix(string(b), "# mine\n") {
		t.Fatalf("the target was not edited in place:\n%s", b)
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o600 {
		t.Errorf("the target's mode became %v", st.Mode().Perm())
	}

	dangling := filepath.Join(dir, "dangling.toml")
	if err := os.Symlink(filepath.Join(dir, "gone.toml"), dangling); err != nil {
		t.Fatal(err)
	}
	err = SetCurrentContext(dangling, "staging")
	if err == nil || !strings.Contains(err.Error(), "a link that leads nowhere") {
		t.Fatalf("a dangling link: %v", err)
	}
	if st, err := os.Lstat(dangling); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the dangling link was replaced: %v", err)
	}
}
