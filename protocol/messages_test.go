package protocol

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestTheUnionsHoldEveryMessage: each type of the const block "Message
// types a tab sends" is read by fromTab, each of "Message types the relay
// sends" by toTab (but the reserved scope), and every Go type that says it
// is a FromTab or a ToTab (its fromTab or toTab method) is in its union's
// table: a new message that is declared but not listed fails here, not on
// a tab's socket.
func TestTheUnionsHoldEveryMessage(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "messages.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatalf("parse messages.go: %v", err)
	}
	reserved := map[string]bool{TypeScope: true}
	// connect-info is declared once, among what a tab sends: the relay
	// answers the request with a message of the same type.
	answeredInKind := map[string]bool{TypeConnectInfo: true}
	for _, u := range []struct {
		block, method string
		table         map[string]reflect.Type
	}{
		{"Message types a tab sends", "fromTab", typesOf(fromTab)},
		{"Message types the relay sends", "toTab", typesOf(toTab)},
	} {
		declared := constBlock(t, f, u.block)
		for _, typ := range declared {
			if _, ok := u.table[typ]; !ok && !reserved[typ] {
				t.Errorf("%q (%s) is not in %s: list it with its message's Go type", typ, u.block, u.method)
			}
		}
		for typ := range u.table {
			if !slices.Contains(declared, typ) && !(u.method == "toTab" && answeredInKind[typ]) {
				t.Errorf("%s reads %q, which is not among the %s", u.method, typ, strings.ToLower(u.block))
			}
		}
		inTable := map[string]bool{}
		for _, rt := range u.table {
			inTable[rt.Name()] = true
		}
		for _, name := range receivers(f, u.method) {
			if !inTable[name] && !(u.method == "fromTab" && name == "Unknown") {
				t.Errorf("%s has a %s method but no type of %s reads it", name, u.method, u.method)
			}
		}
	}
}

// TestDecodeFromTab: each message a tab sends reads as its type's Go
// value; one that lacks what its type needs, or has a field of the wrong
// JSON type, is an error; a type the relay does not know is Unknown.
func TestDecodeFromTab(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       FromTab // nil: an error
	}{
		{"focus", `{"type":"focus","at":7}`, Focus{Envelope: Typed(TypeFocus), At: 7}},
		{"focus without a time", `{"type":"focus"}`, Focus{Envelope: Typed(TypeFocus)}},
		{"focus at a string", `{"type":"focus","at":"x"}`, nil},
		{"result", `{"type":"result","id":"c1","result":{"data":1}}`,
			Result{Envelope: Typed(TypeResult), ID: "c1", Result: json.RawMessage(`{"data":1}`), Decoded: &TabResult{Data: json.RawMessage(`1`)}}},
		{"result kept as sent", `{"type":"result","id":"c1","result":{ "data" : 1, "x":2 }}`,
			Result{Envelope: Typed(TypeResult), ID: "c1", Result: json.RawMessage(`{ "data" : 1, "x":2 }`), Decoded: &TabResult{Data: json.RawMessage(`1`)}}},
		{"result without an id", `{"type":"result","result":{}}`, nil},
		{"result without a result", `{"type":"result","id":"c1"}`, nil},
		{"result that is no TabResult", `{"type":"result","id":"c1","result":{"images":"x"}}`, nil},
		{"asking", `{"type":"asking","id":"c1"}`, Asking{Envelope: Typed(TypeAsking), ID: "c1"}},
		{"answered", `{"type":"answered","id":"c1"}`, Asking{Envelope: Typed(TypeAnswered), ID: "c1"}},
		{"answered without an id", `{"type":"answered"}`, nil},
		{"progress without an id", `{"type":"progress","progress":1}`, nil},
		{"permissions without an id", `{"type":"permissions","tools":{}}`, nil},
		{"log", `{"type":"log","id":"c1","level":"info","data":[1]}`,
			Log{Envelope: Typed(TypeLog), ID: "c1", Level: "info", Data: json.RawMessage(`[1]`)}},
		{"log without data", `{"type":"log","id":"c1","level":"info"}`, nil},
		{"step", `{"type":"step","by":"person"}`, Step{Envelope: Typed(TypeStep), By: StepByPerson}},
		{"step by nobody", `{"type":"step","by":""}`, nil},
		{"decline", `{"type":"decline","ref":"r1","code":"K"}`, Approve{Envelope: Envelope{Type: TypeDecline, Ref: "r1"}, Code: "K"}},
		{"list-connections", `{"type":"list-connections","ref":"r1"}`, ListConnections{Envelope: Envelope{Type: TypeListConnections, Ref: "r1"}}},
		{"connect-info", `{"type":"connect-info","ref":"r1","code":"K"}`,
			ConnectInfoRequest{Envelope: Envelope{Type: TypeConnectInfo, Ref: "r1"}, Code: "K"}},
		{"pong", `{"type":"pong"}`, Pong{Envelope: Typed(TypePong)}},
		{"a newer protocol's", `{"type":"x-newer","ref":"r1","more":true}`, Unknown{Envelope: Envelope{Type: "x-newer", Ref: "r1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := DecodeType([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeFromTab(env, []byte(tc.data))
			switch {
			case tc.want == nil && err == nil:
				t.Fatalf("read as %#v, want an error", got)
			case tc.want != nil && err != nil:
				t.Fatalf("error %v, want %#v", err, tc.want)
			case !reflect.DeepEqual(got, tc.want):
				t.Fatalf("read as %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestEveryRelayMessageReadsBack: what the relay sends of each type reads
// back as the same value (the tab actor reads the pairing's messages so).
func TestEveryRelayMessageReadsBack(t *testing.T) {
	for typ, like := range toTab {
		t.Run(typ, func(t *testing.T) {
			v := reflect.New(reflect.TypeOf(like)).Elem()
			v.FieldByName("Envelope").Set(reflect.ValueOf(Envelope{Type: typ, Ref: "r1"}))
			sent := v.Interface().(ToTab)
			data, err := json.Marshal(sent)
			if err != nil {
				t.Fatal(err)
			}
			env, err := DecodeType(data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeToTab(env, data)
			if err != nil || !reflect.DeepEqual(got, sent) {
				t.Fatalf("%s read back as %#v, %v; want %#v", data, got, err, sent)
			}
		})
	}
	if _, err := DecodeToTab(Typed(TypeScope), []byte(`{"type":"scope"}`)); err == nil {
		t.Fatal("a scope message read: this build never sends one")
	}
}

func typesOf[U any](table map[string]U) map[string]reflect.Type {
	types := map[string]reflect.Type{}
	for typ, like := range table {
		types[typ] = reflect.TypeOf(like)
	}
	return types
}

// constBlock returns the string values of the const block of f whose doc
// comment starts with title.
func constBlock(t *testing.T, f *ast.File, title string) []string {
	t.Helper()
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST || gd.Doc == nil || !strings.HasPrefix(gd.Doc.Text(), title) {
			continue
		}
		var values []string
		for _, spec := range gd.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: a constant that is no string", title)
				}
				s, _ := strconv.Unquote(lit.Value)
				values = append(values, s)
			}
		}
		sort.Strings(values)
		return values
	}
	t.Fatalf("messages.go has no const block %q", title)
	return nil
}

// receivers returns the types of f that have a method called name.
func receivers(f *ast.File, name string) []string {
	var types []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || fd.Name.Name != name {
			continue
		}
		rt := fd.Recv.List[0].Type
		if star, ok := rt.(*ast.StarExpr); ok {
			rt = star.X
		}
		types = append(types, rt.(*ast.Ident).Name)
	}
	return types
}

// TestClip: what the relay quotes from outside is cut on a rune, marked,
// and valid UTF-8.
func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"éééé", 2, "éé…"},
		{"a\xffb", 5, "ab"},
	} {
		if got := Clip(tc.in, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
