package store

import (
	"strings"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
)

// AuditSelect and ApprovalSelect are the one reading of a filter as SQL:
// each backend (SQLite here, package store/postgres) renders the same
// conditions, order and limit, in its own placeholder style, so the two
// stores cannot come to select different rows for one filter.

// Query is a filter read as SQL: the conditions ANDed in a WHERE clause,
// each an "column op" expression with its argument, and the ORDER BY and
// LIMIT that follow it.
type Query struct {
	Conds   []Cond
	OrderBy string
	Limit   int
}

// Cond is one condition: Expr is "column op" (e.g. "plugin ="), compared
// with Arg through a placeholder.
type Cond struct {
	Expr string
	Arg  any
}

// AuditSelect reads an audit filter. The rows come newest first when
// f.Newest; the caller reverses them into sequence order.
func AuditSelect(f audit.Filter) Query {
	q := Query{OrderBy: "seq", Limit: f.Limit}
	q.add("seq >", f.AfterSeq, true)
	q.add("plugin =", f.Plugin, f.Plugin != "")
	q.add("tool =", f.Tool, f.Tool != "")
	q.add("decision =", f.Decision, f.Decision != "")
	q.add("type =", f.Type, f.Type != "")
	q.add("run_id =", f.RunID, f.RunID != "")
	q.add("time_ns >=", f.Since.UnixNano(), !f.Since.IsZero())
	if f.Newest {
		q.OrderBy = "seq DESC"
	}
	if q.Limit <= 0 {
		q.Limit = 1000
	}
	return q
}

// ApprovalSelect reads an approval filter: newest first.
func ApprovalSelect(f approval.ListFilter) Query {
	q := Query{OrderBy: "created_ns DESC, id DESC", Limit: f.Limit}
	q.add("state =", string(f.State), f.State != "")
	q.add("run_id =", f.RunID, f.RunID != "")
	q.add("action_hash =", f.ActionHash, f.ActionHash != "")
	if q.Limit <= 0 {
		q.Limit = 100
	}
	return q
}

func (q *Query) add(expr string, arg any, when bool) {
	if when {
		q.Conds = append(q.Conds, Cond{expr, arg})
	}
}

// SQL renders "WHERE … ORDER BY … LIMIT …" after the arguments already in
// args (a backend's own leading conditions, e.g. a tenant, given as pre),
// numbering each placeholder with ph(n), n the argument's 1-based
// position. It returns the clause and every argument.
func (q Query) SQL(pre []string, args []any, ph func(n int) string) (string, []any) {
	where := append([]string(nil), pre...)
	for _, c := range q.Conds {
		args = append(args, c.Arg)
		where = append(where, c.Expr+" "+ph(len(args)))
	}
	if len(where) == 0 {
		where = []string{"1=1"}
	}
	args = append(args, q.Limit)
	return " WHERE " + strings.Join(where, " AND ") + " ORDER BY " + q.OrderBy + " LIMIT " + ph(len(args)), args
}

// sqlitePlaceholder is SQLite's: every argument a "?".
func sqlitePlaceholder(int) string { return "?" }
