package protocol_test

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
)

// docPath is the tab protocol's document, relative to this package.
const docPath = "../docs/tab-protocol.md"

// docErrorCodes lists every error code constant of errors.go, checked
// against errors.go: a new ErrCode constant fails here until it is listed
// and documented.
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
	"ErrCodeCrossDevice":  protocol.ErrCodeCrossDevice,
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

	types := messageTypes(t)
	for _, name := range sortedKeys(types) {
		typ := types[name]
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
		// A row of the close codes table: | code | `name` | reason | reconnect… or stop…
		row := fmt.Sprintf("| %d | `%s` | %s | ", int(c), c, c.Reason())
		at := strings.Index(doc, row)
		if at < 0 {
			t.Errorf("close code %d has no row %q in %s", int(c), row, docPath)
			continue
		}
		does := doc[at+len(row):]
		if c.Reconnect() != !strings.HasPrefix(does, "stop") {
			t.Errorf("close code %d: %s says %.40q, the table says reconnect=%v", int(c), docPath, does, c.Reconnect())
		}
	}
}

// messageTypes returns the message types messages.go declares, by the
// name of their Type constant: a new one fails TestProtocolDoc until it
// is documented.
func messageTypes(t *testing.T) map[string]string {
	t.Helper()
	types := declaredConsts(t, "messages.go", "Type")
	if len(types) == 0 {
		t.Fatal("no Type constants found in messages.go")
	}
	return types
}

// TestProtocolDocListsEveryType keeps docErrorCodes in step with the
// ErrCode constants declared in errors.go.
func TestProtocolDocListsEveryType(t *testing.T) {
	declared := declaredConsts(t, "errors.go", "ErrCode")
	if len(declared) == 0 {
		t.Fatal("no ErrCode constants found in errors.go")
	}
	for _, name := range sortedKeys(declared) {
		if _, ok := docErrorCodes[name]; !ok {
			t.Errorf("errors.go declares %s, which docErrorCodes does not list: add it here and to %s", name, docPath)
		}
	}
	for _, name := range sortedKeys(docErrorCodes) {
		if _, ok := declared[name]; !ok {
			t.Errorf("docErrorCodes lists %s, which errors.go no longer declares", name)
		}
	}
}

// declaredConsts returns the string constants of file whose names start
// with prefix (and are longer than it), with their values.
func declaredConsts(t *testing.T, file, prefix string) map[string]string {
	t.Helper()
	declared, err := protocol.DeclaredConsts(file, prefix)
	if err != nil {
		t.Fatal(err)
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
