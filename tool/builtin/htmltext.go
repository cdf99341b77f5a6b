package builtin

import (
	"bytes"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxHTMLDepth bounds the element nesting htmlToMarkdown follows.
const maxHTMLDepth = 256

// htmlToMarkdown converts an HTML document to readable Markdown: headings,
// paragraphs, links (resolved against base), lists, code blocks, quotes,
// emphasis, images as their alt text, tables as pipe rows. Scripts, styles,
// forms, frames and other non-content elements are dropped. The result is
// valid UTF-8 whatever the input.
func htmlToMarkdown(doc []byte, base *url.URL) (title, text string) {
	root, err := html.Parse(bytes.NewReader(doc))
	if err != nil {
		return "", strings.ToValidUTF8(string(doc), "\uFFFD")
	}
	c := &mdConv{base: base}
	c.walk(root, 0)
	return strings.TrimSpace(c.title), c.result()
}

type mdConv struct {
	base    *url.URL
	b       strings.Builder
	title   string
	lists   []listState
	pre     int
	pending string // whitespace owed before the next word
	bol     bool   // at the beginning of a line
	quote   int
}

type listState struct {
	ordered bool
	n       int
}

func (c *mdConv) result() string {
	s := c.b.String()
	// Collapse runs of blank lines.
	for strings.Contains(s, "\n\n\n") {
		s = strings.ReplaceAll(s, "\n\n\n", "\n\n")
	}
	return strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
}

// block ends the current line and leaves one blank line.
func (c *mdConv) block() {
	s := c.b.String()
	switch {
	case s == "":
	case strings.HasSuffix(s, "\n\n"):
	case strings.HasSuffix(s, "\n"):
		c.b.WriteString("\n")
	default:
		c.b.WriteString("\n\n")
	}
	c.pending, c.bol = "", true
}

func (c *mdConv) newline() {
	if s := c.b.String(); s != "" && !strings.HasSuffix(s, "\n") {
		c.b.WriteString("\n")
	}
	c.pending, c.bol = "", true
}

func (c *mdConv) write(s string) {
	if s == "" {
		return
	}
	if c.bol {
		c.b.WriteString(strings.Repeat("> ", c.quote))
		c.bol = false
	} else if c.pending != "" {
		c.b.WriteString(c.pending)
	}
	c.pending = ""
	c.b.WriteString(s)
}

func (c *mdConv) text(s string) {
	if c.pre > 0 {
		c.b.WriteString(s)
		return
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		if s != "" && !c.bol {
			c.pending = " "
		}
		return
	}
	if startsSpace(s) && !c.bol {
		c.pending = " "
	}
	for i, f := range fields {
		if i > 0 {
			c.pending = " "
		}
		c.write(f)
	}
	if endsSpace(s) {
		c.pending = " "
	}
}

func startsSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == ' ' || r == '\n' || r == '\t' || r == '\r' || r == '\f'
}

func endsSpace(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r == ' ' || r == '\n' || r == '\t' || r == '\r' || r == '\f'
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func (c *mdConv) href(h string) string {
	h = strings.TrimSpace(h)
	u, err := url.Parse(h)
	if err != nil || h == "" {
		return ""
	}
	if c.base != nil {
		u = c.base.ResolveReference(u)
	}
	switch u.Scheme {
	case "http", "https", "mailto":
		return u.String()
	}
	return "" // javascript:, data: and friends are not links
}

func (c *mdConv) children(n *html.Node, depth int) {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c.walk(ch, depth+1)
	}
}

func (c *mdConv) walk(n *html.Node, depth int) {
	if depth > maxHTMLDepth {
		return
	}
	switch n.Type {
	case html.TextNode:
		c.text(n.Data)
		return
	case html.DocumentNode:
		c.children(n, depth)
		return
	case html.ElementNode:
	default:
		return
	}
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Iframe, atom.Object,
		atom.Embed, atom.Form, atom.Button, atom.Select, atom.Input, atom.Textarea, atom.Canvas, atom.Link, atom.Meta:
		return
	case atom.Title:
		if n.FirstChild != nil && c.title == "" {
			c.title = strings.Join(strings.Fields(n.FirstChild.Data), " ")
		}
		return
	case atom.Head:
		c.children(n, depth) // for the title
		return
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		c.block()
		c.write(strings.Repeat("#", int(n.Data[1]-'0')) + " ")
		c.children(n, depth)
		c.block()
	case atom.P, atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.Footer, atom.Nav, atom.Aside, atom.Figure, atom.Table, atom.Dl:
		c.block()
		c.children(n, depth)
		c.block()
	case atom.Br:
		c.newline()
	case atom.Hr:
		c.block()
		c.write("---")
		c.block()
	case atom.Pre:
		c.block()
		c.write("```")
		c.b.WriteString("\n")
		c.pre++
		c.children(n, depth)
		c.pre--
		c.newline()
		c.b.WriteString("```")
		c.block()
	case atom.Code:
		if c.pre > 0 {
			c.children(n, depth)
			return
		}
		c.write("`")
		c.children(n, depth)
		c.b.WriteString("`")
	case atom.Strong, atom.B:
		c.write("**")
		c.children(n, depth)
		c.b.WriteString("**")
	case atom.Em, atom.I:
		c.write("_")
		c.children(n, depth)
		c.b.WriteString("_")
	case atom.A:
		h := c.href(attr(n, "href"))
		if h == "" {
			c.children(n, depth)
			return
		}
		c.write("[")
		c.children(n, depth)
		c.b.WriteString("](" + h + ")")
	case atom.Img:
		if alt := strings.TrimSpace(attr(n, "alt")); alt != "" {
			c.write("[image: " + strings.Join(strings.Fields(alt), " ") + "]")
		}
	case atom.Ul, atom.Ol:
		c.newline()
		c.lists = append(c.lists, listState{ordered: n.DataAtom == atom.Ol})
		c.children(n, depth)
		c.lists = c.lists[:len(c.lists)-1]
		if len(c.lists) == 0 {
			c.block()
		}
	case atom.Li:
		c.newline()
		indent := ""
		marker := "- "
		if k := len(c.lists); k > 0 {
			indent = strings.Repeat("  ", k-1)
			if c.lists[k-1].ordered {
				c.lists[k-1].n++
				marker = itoa(c.lists[k-1].n) + ". "
			}
		}
		c.write(indent + marker)
		c.children(n, depth)
		c.newline()
	case atom.Blockquote:
		c.block()
		c.quote++
		c.children(n, depth)
		c.quote--
		c.block()
	case atom.Tr:
		c.newline()
		c.write("|")
		c.children(n, depth)
		c.newline()
	case atom.Td, atom.Th:
		c.pending = " "
		c.children(n, depth)
		c.pending = ""
		c.b.WriteString(" |")
	case atom.Dt:
		c.newline()
		c.children(n, depth)
		c.newline()
	case atom.Dd:
		c.newline()
		c.write(": ")
		c.children(n, depth)
		c.newline()
	default:
		c.children(n, depth)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
