package codeenv

import "testing"

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Class
	}{
		{"BASH_ENV", Shell}, {"ENV", Shell}, {"PROMPT_COMMAND", Shell}, {"PS0", Shell}, {"PS1", Shell},
		{"PS4", Shell}, {"IFS", Shell}, {"SHELLOPTS", Shell}, {"BASHOPTS", Shell},
		{"BASH_FUNC_ls%%", Shell}, {"LD_PRELOAD", Shell}, {"LD_LIBRARY_PATH", Shell}, {"LD_AUDIT", Shell},
		{"PATH", Search}, {"HOME", Search}, {"GIT_SSH_COMMAND", Search}, {"GIT_CONFIG_COUNT", Search},
		{"GIT_CONFIG_KEY_0", Search}, {"GIT_EXEC_PATH", Search}, {"NODE_OPTIONS", Search},
		{"NODE_PATH", Search}, {"PYTHONSTARTUP", Search}, {"PYTHONPATH", Search}, {"PYTHONHOME", Search},
		{"PERL5OPT", Search}, {"PERL5LIB", Search}, {"RUBYOPT", Search}, {"RUBYLIB", Search},
		{"JAVA_TOOL_OPTIONS", Search}, {"_JAVA_OPTIONS", Search},
		{"LANG", None}, {"TZ", None}, {"GOFLAGS_X", None}, {"path", None}, {"MY_PATH", None},
		{"BASH", None}, {"GITHUB_TOKEN", None}, {"", None},
	} {
		if got := Of(tc.name); got != tc.want {
			t.Errorf("Of(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
