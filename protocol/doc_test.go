package protocol_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
)

// docPath is the tab protocol's document, relative to this package.
const docPath = "../docs/tab-protocol.md"

// docMessageTypes lists every message type constant of messages.go. The
// test also checks this list against messages.go, so a new Type constant
// fails here until it is listed and documented.
var docMessageTypes = map[string]string{
	"TypeHello":              protocol.TypeHello,
	"TypeFocus":              protocol.TypeFocus,
	"TypeResult":             protocol.TypeResult,
	"TypeAsking":             protocol.TypeAsking,
	"TypeAnswered":           protocol.TypeAnswered,
	"TypeStep":               protocol.TypeStep,
	"TypeProgress":           protocol.TypeProgress,
	"TypeLog":                protocol.TypeLog,
	"TypePermissions":        protocol.TypePermissions,
	"TypePermissionsQuery":   protocol.TypePermissionsQuery,
	"TypePermissionsChanged": protocol.TypePermissionsChanged,
	"TypeApprove":            protocol.TypeApprove,
	"TypeDecline":            protocol.TypeDecline,
	"TypeListConnections":    protocol.TypeListConnections,
	"TypeForget":             protocol.TypeForget,
	"TypeSetScope":           protocol.TypeSetScope,
	"TypeConnectInfo":        protocol.TypeConnectInfo,
	"TypePong":               protocol.TypePong,
	"TypeWelcome":            protocol.TypeWelcome,
	"TypeCall":               protocol.TypeCall,
	"TypeCancel":             protocol.TypeCancel,
	"TypeConnections":        protocol.TypeConnections,
	"TypeScope":              protocol.TypeScope,
	"TypePing":               protocol.TypePing,
	"TypeDrain":              protocol.TypeDrain,
	"TypeDone":               protocol.TypeDone,
	"TypeError":              protocol.TypeError,
}

// docErrorCodes lists every error code constant of errors.go, checked
// against errors.go like docMessageTypes: a new ErrCode constant fails
// here until it is listed and documented.
var docErrorCodes = map[string]string{
	"ErrCodeUnsupported":  protocol.ErrCodeUnsupported,
	"ErrCodeWrongCode":    protocol.ErrCodeWrongCode,
	"ErrCodeCodeUsed":     protocol.ErrCodeCodeUsed,
	"ErrCodeCodeExpired":  protocol.ErrCodeCodeExpired,
	"ErrCodeLimited":      protocol.ErrCodeLimited,
	"ErrCodeNotFound":     protocol.ErrCodeNotFound,
	"ErrCodeInvalidScope": protocol.ErrCodeInvalidScope,
	"ErrCodeBadRequest":   protocol.ErrCodeBadRequest,
	"ErrCodeUnavailable":  protocol.ErrCodeUnavailable,
}

// TestProtocolDoc fails when docs/tab-protocol.md does not mention a
// message type, an error code or a close code, so the document cannot fall
// behind the code.
func TestProtocolDoc(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("read the tab protocol document: %v", err)
	}
	doc := string(raw)

	for _, name := range sortedKeys(docMessageTypes) {
		typ := docMessageTypes[name]
		// In code spans (`hello`) or in JSON ("type":"hello"): a bare word
		// such as "result" would be found anywhere.
		if !strings.Contains(doc, "`"+typ+"`") && !strings.Contains(doc, `"type":"`+typ+`"`) {
			t.Errorf("%s: message type %q is not documented in %s (write it as `%s`)", name, typ, docPath, typ)
		}
	}

	for _, name := range sortedKeys(docErrorCodes) {
		code := docErrorCodes[name]
		// A row of the error codes table: | `code` | …
		if !strings.Contains(doc, "| `"+code+"` |") {
			t.Errorf("%s: error code %q has no row in the error codes table of %s (| `%s` | …)", name, code, docPath, code)
		}
	}

	codes := protocol.CloseCodes()
	if len(codes) == 0 {
		t.Fatal("protocol.CloseCodes() is empty")
	}
	for _, c := range codes {
		num := regexp.MustCompile(`\b` + strconv.Itoa(int(c)) + `\b`)
		if !num.MatchString(doc) {
			t.Errorf("close code %d (%s) is not documented in %s", int(c), c, docPath)
		}
		if !strings.Contains(doc, "`"+c.String()+"`") {
			t.Errorf("close code %d: its name `%s` is not documented in %s", int(c), c, docPath)
		}
	}
}

// TestProtocolDocListsEveryType keeps docMessageTypes and docErrorCodes in
// step with the Type constants declared in messages.go and the ErrCode
// constants declared in errors.go.
func TestProtocolDocListsEveryType(t *testing.T) {
	for _, list := range []struct {
		file, prefix, name string
		listed             map[string]string
	}{
		{"messages.go", "Type", "docMessageTypes", docMessageTypes},
		{"errors.go", "ErrCode", "docErrorCodes", docErrorCodes},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), list.file, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", list.file, err)
		}
		declared := declaredConsts(f, list.prefix)
		if len(declared) == 0 {
			t.Fatalf("no %s constants found in %s", list.prefix, list.file)
		}
		for _, name := range sortedKeys(declared) {
			if _, ok := list.listed[name]; !ok {
				t.Errorf("%s declares %s, which %s does not list: add it here and to %s", list.file, name, list.name, docPath)
			}
		}
		for _, name := range sortedKeys(list.listed) {
			if _, ok := declared[name]; !ok {
				t.Errorf("%s lists %s, which %s no longer declares", list.name, name, list.file)
			}
		}
	}
}

// declaredConsts returns the constants of f whose names start with prefix
// (and are longer than it).
func declaredConsts(f *ast.File, prefix string) map[string]string {
	declared := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			for _, n := range spec.(*ast.ValueSpec).Names {
				if strings.HasPrefix(n.Name, prefix) && len(n.Name) > len(prefix) {
					declared[n.Name] = ""
				}
			}
		}
	}
	return declared
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
