package shellcmd

import (
	"slices"
	"testing"
)

// TestHiddenCode: every construct in which bash runs code the parse tree
// does not show as a command is Unknown; common commands stay analyzable.
func TestHiddenCode(t *testing.T) {
	unknown := []string{
		// arithmetic of a variable's value or of an expansion
		`x='a[$(id)]'; (( x ))`,
		`echo $(( x + 1 ))`,
		`echo $(($x))`,
		`echo $[x]`,
		`for ((i=x; i<3; i++)); do :; done`,
		`let x`,
		`let 'x=1'`,
		`[[ $x -eq 1 ]]`,
		`[[ 1 -lt x ]]`,
		`declare -i y; y=$x`,
		`typeset -i n=1`,
		`local -n r=x`,
		`declare -n r="$x"`,
		// subscripts
		`echo ${a[x]}`,
		`echo ${a[$i]}`,
		`echo ${#a[x]}`,
		`a[$i]=1`,
		`a=([x]=1)`,
		`declare -A m=([$k]=1)`,
		`declare -a m=([k]=1)`,
		`BASH_CMDS[git]=/tmp/evil; git status`,
		`declare -A BASH_CMDS=([git]=/tmp/evil)`,
		`declare -a y=([x]=1)`,
		`echo ${s:x}`,
		`echo ${@:x:1}`,
		// indirect and transformation expansions
		`echo ${!r}`,
		`echo "${!r}"`,
		`echo ${x@P}`,
		`printf '%s' "${x@P}"`,
		// variable names evaluated by builtins
		`[[ -v $x ]]`,
		`[[ -v 'a[$(id)]' ]]`,
		`test -v "$x"`,
		`[ -v "$x" ]`,
		`[ "$op" "$x" ]`,
		`[ $x ]`,
		`printf -v "$x" 1`,
		`printf -v 'a[$(id)]' 1`,
		`printf "$f" "$x"`,
		`read "$x" <<<1`,
		`read -a "$x" <<<1`,
		`read -r 'a[$(id)]' <<<1`,
		`mapfile "$x" </dev/null`,
		`mapfile -C cb m </dev/null`,
		// extended globs: the parser keeps the pattern as text, bash
		// expands it ([[ ]] reads extended globs without shopt)
		`echo hi && [[ x == @($(id)) ]]`,
		"[[ x == +(`id`) ]]",
		`[[ x != !($(id)) ]]`,
		`[[ x = *($(id)|b) ]]`,
		`[[ x == a?(${y:-$(id)})b ]]`,
		"shopt -s extglob\necho @($(id))",
		`unset "$x"`,
		`unset 'A[$(id)]'`,
		`unset a[1]`,
		`getopts ab "$x"`,
		`wait -p "$x"`,
		`declare "$x=1"`,
		`export "$x"`,
		`declare 'a[$(id)]=1'`,
		`command declare "$x"`,
		`builtin export "$x=1"`,
		`exec {a[$(id)]}>/dev/null`,
		// behaviour-changing variables, prefix, standalone and declared
		`PATH=/tmp/evil; git status`,
		`PATH=/tmp/evil git status`,
		`export PATH=/tmp/evil`,
		`declare -x PATH=.`,
		`HOME=/tmp/x git status`,
		`IFS=x; echo $y`,
		`IFS=, echo hi`,
		`BASH_ENV=/tmp/x bash -c 'echo hi'`,
		`ENV=/tmp/x sh -i`,
		`PROMPT_COMMAND='rm x'`,
		`PS1='$(rm x)'`,
		`PS4='$(rm x)'; set -x; echo`,
		`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=id git log`,
		`GIT_SSH_COMMAND=id git fetch`,
		`export GIT_DIR=/tmp/x`,
		`LD_PRELOAD=/tmp/x.so ls`,
		`env LD_PRELOAD=/tmp/x.so ls`,
		`env PATH=/tmp git status`,
		`readonly LD_LIBRARY_PATH=/tmp`,
		`local HOME=/tmp`,
		`for PATH in /tmp/evil; do git status; done`,
		`read -r PATH <<<x`,
		`printf -v PATH %s /tmp`,
		`exec {IFS}>/dev/null`,
		// integer variables evaluate what is assigned to them
		`RANDOM='a[$(id)]'`,
		`export SRANDOM="$x"`,
		`read RANDOM <<<x`,
		`printf -v OPTIND %s x`,
		`for OPTIND in x; do echo; done`,
		`mapfile HISTCMD </dev/null`,
		`getopts ab OPTIND`,
		`OPTIND=x`,
		`OPTIND+=1`,
		// traps, eval, source, code-loading builtins
		`trap "$x" EXIT`,
		`eval "$x"`,
		`eval $(cat f)`,
		`source "$f"`,
		`. $f`,
		`source ./env.sh`,
		`. id`,
		`enable -f ./x.so x`,
		`hash -p /tmp/evil git; git status`,
		`alias git='rm -rf x'`,
		`compgen -W '$(id)'`,
		`complete -C 'rm x' git`,
		`bind -x '"\C-a": rm x'`,
		`set -k; git status X=1`,
		`set -a; npm_config_x=1 ; npm test`,
		`set -o allexport`,
		`coproc PATH { :; }`,
		`: ${PATH:=/tmp}`,
		`echo ${IFS=x}`,
		`set -o emacs`,
		`set -H`,
		`set "$x"`,
		`shopt -s expand_aliases`,
		`shopt -u interactive_comments`,
		`set +o interactive-comments`,
		`fc -s`,
		`sudo -s 'rm x'`,
		`sh -Ccl 0`,
		`bash -l -c 'git status'`,
		`bash -ic 'git status'`,
		`bash --login -c x`,
		// wrappers and command names
		`command "$x"`,
		`builtin "$x"`,
		`exec "$x"`,
		`$CMD x`,
	}
	for _, c := range unknown {
		if got := Parse(c); got.Unknown == "" {
			t.Errorf("Parse(%q) is analyzable (spawns %q); want Unknown", c, got.Spawns)
		}
	}
	known := []string{
		`git status`,
		`OPTIND=1`,
		`f() { local OPTIND; getopts ab o; }`,
		`ls -la | grep x`,
		`for f in *.go; do gofmt -l "$f"; done`,
		`FOO=1 go test ./...`,
		`export X=1`,
		`export X="$(pwd)"`,
		`x=1; echo $x`,
		`local x=1`,
		`echo $(( 1 + 2 )) $(( 0x1f )) $(( $# + 1 ))`,
		`[[ $# -gt 0 ]] && echo args`,
		`[[ $? -ne 0 ]] || echo ok`,
		`[[ ${#x} -gt 3 ]]`,
		`[[ -v x ]] && [[ -v a[0] ]]`,
		`[ -n "$x" ] && [ "$x" = "$y" ] && [ -f "$f" ] && [ "$x" ]`,
		`test -v HOME`,
		`echo ${a[0]} ${a[@]} "${a[*]}" ${!a[@]} ${!pre*} ${#a[@]}`,
		`echo ${x:-d} ${x/a/b} ${x#p} ${x^^} "${x@Q}" ${s:1:2}`,
		`while IFS= read -r line; do echo "$line"; done < f`,
		`IFS=, read -ra parts <<< "$x"`,
		`read -r -p "$prompt" name`,
		`printf '%s\n' "$x"`,
		`printf -v out '%d' 3`,
		`mapfile -t lines < f`,
		`unset x 'a[1]'`,
		`trap 'rm -f tmp' EXIT`,
		`trap - EXIT`,
		`eval 'echo hi'`,
		`set -euo pipefail`,
		`set -- "$@" x`,
		`shopt -s nullglob`,
		`a=(1 2 3); a+=(4); a[2]=5`,
		`declare -A m; declare -r c=1; declare -a l=(x y)`,
		`declare -A m=([key]=v ['k 2']=w)`,
		`cd "$dir" && make`,
		`git log HEAD~1`,
		`command -v git`,
		`exec git status`,
		`find . -name '*.go' -exec gofmt -l {} +`,
		`echo a b | xargs -n1 echo`,
		`bash -c 'git status'`,
		`bash -i`,
	}
	for _, c := range known {
		if got := Parse(c); got.Unknown != "" {
			t.Errorf("Parse(%q): Unknown %q; want analyzable", c, got.Unknown)
		}
	}
}

// TestHiddenSpawns: what the hidden places run is reported, and words
// that bash computes are never literal.
func TestHiddenSpawns(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string // a spawn that must be reported
	}{
		{`trap 'rm -f tmp' EXIT`, []string{"rm", "-f", "tmp"}},
		{`export X=1`, []string{"export", "X=1"}},
		{`declare -x y=1`, []string{"declare", "-x", "y=1"}},
		{`FOO=bar; go test`, []string{"FOO=bar"}},
		{`echo push | xargs git`, []string{"git", dynamicWords}},
		{`xargs -I{} git {} <f`, []string{"git", dynamicWord, dynamicWords}},
		{`find . -exec git {} \;`, []string{"git", dynamicWord}},
		{`find . -exec git + \;`, []string{"git", "+"}},
		{`env - git x`, []string{"git", "x"}},
		{`flock /tmp/l -c 'rm x'`, []string{"rm", "x"}},
		{`{r"m",-rf} x`, []string{dynamicWords, "x"}},
		{`echo a{b,"c"}`, []string{"echo", dynamicWords}},
		{`echo x=~/y`, []string{"echo", dynamicWord}},
		{`echo "$@"`, []string{"echo", dynamicWords}},
	}
	for _, tt := range tests {
		got := Parse(tt.cmd)
		if !slices.ContainsFunc(got.Spawns, func(a []string) bool { return slices.Equal(a, tt.want) }) {
			t.Errorf("Parse(%q) spawns %q; want one %q", tt.cmd, got.Spawns, tt.want)
		}
	}
}
