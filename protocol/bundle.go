package protocol

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bundle is the app's catalogue as shipped to the relay (SPEC §1): its
// tools, its instructions, its UI resources, and the versions of the bundle
// and of the wire protocol its tabs speak.
type Bundle struct {
	Version      string       `json:"version"`  // the bundle's own version; tabs announce the one they run
	Protocol     int          `json:"protocol"` // the tab wire protocol version
	App          App          `json:"app"`
	Instructions string       `json:"instructions"`
	DataTag      string       `json:"dataTag,omitempty"` // the data tags' name; DefaultDataTag when empty
	Tools        []Tool       `json:"tools"`
	Resources    []UIResource `json:"resources,omitempty"`
	// Templates are resources whose content depends on parts of their URI
	// ({id} in the template is put into the text).
	Templates []ResourceTemplate `json:"resourceTemplates,omitempty"`
	Prompts   []Prompt           `json:"prompts,omitempty"`
	// AnswersAt says where an agent can see what a call did once the relay
	// stopped waiting for it (a detach, a timeout, a restart, a tab that
	// closed): words that complete "read …", such as "the history (the
	// `history` tool)". Empty: the relay's sentences tell the agent to ask
	// the person instead, since most apps have no such place (issue 15).
	AnswersAt string `json:"answersAt,omitempty"`
}

// ResourceTemplate is a family of static resources: URITemplate has
// {name} parts, and the same {name} in Text is replaced by what the URI
// read holds there.
type ResourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType"`
	Text        string `json:"text"`
}

// Prompt is a canned prompt the app offers hosts (MCP prompts): its
// messages, with {argument} parts filled in from the host's arguments.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Messages    []PromptMessage  `json:"messages"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptMessage is one message of a prompt: text, an image, or an
// embedded resource.
type PromptMessage struct {
	Role    string  `json:"role"` // "user" | "assistant"
	Content Content `json:"content"`
}

// App names the web application whose tabs the relay reaches.
type App struct {
	Name  string `json:"name"`  // short, lowercase: used in ui:// URIs and sentences
	Title string `json:"title"` // what a person calls it: "open Demo in a tab"
}

// Tool is one tool of the catalogue.
type Tool struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description"`
	InputSchema json.RawMessage  `json:"inputSchema"`
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
	// Actions are the tool's named actions, when it has several: a call
	// names one in its "action" argument, and a scope can grant some of
	// them (SPEC §8).
	Actions []Action `json:"actions,omitempty"`
	Family  string   `json:"family,omitempty"` // groups tools in lists and panels
	// Result says what a result holds: "cells" (cell-level data), "summaries",
	// or "none" (a change that answers with no data); "" is unclassified,
	// which the tab's data switch refuses like cells.
	Result string `json:"result,omitempty"`
	// DataScope tells the tab's data switch which result fields hold
	// single-cell values or pictures and which arguments name groups.
	DataScope *DataScope `json:"dataScope,omitempty"`
	// UI is the uri of the UI resource that shows this tool's results
	// (MCP Apps: carried as _meta.ui.resourceUri).
	UI string `json:"ui,omitempty"`
	// Permissions are the kinds of the person's permission a call of this
	// tool needs (PermissionKinds): the tab asks, allows or refuses by the
	// strictest of them. An action's own list replaces the tool's.
	Permissions []string `json:"permissions,omitempty"`
	// ConfirmAt is when the tab asks the person: "start" (before the
	// handler runs; the default) or "handler" (the handler asks once it
	// knows the cost). An action's own replaces the tool's.
	ConfirmAt string `json:"confirmAt,omitempty"`

	args *argumentSchema // InputSchema compiled (LoadBundle): CheckArguments
}

// DataScope is what the data switch "Agents see names and summaries only"
// needs of a tool (web/sdk, seed 000 "What agents are sent of the data"):
// fields of the result's data ("a.b", "*" for every item) that hold one
// cell's own value or a picture, and arguments that name groups. The relay
// only checks them; the tab applies them.
type DataScope struct {
	SingleCell []string `json:"singleCell,omitempty"`
	Pictures   []string `json:"pictures,omitempty"`
	Groups     []string `json:"groups,omitempty"`
}

var dataField = regexp.MustCompile(`^[^.]+(\.[^.]+)*$`)

func (d *DataScope) check(props map[string]json.RawMessage) error {
	if d == nil {
		return nil
	}
	// In this order, so that the same bundle always reads the same complaint.
	for _, list := range []struct {
		name   string
		fields []string
	}{{"singleCell", d.SingleCell}, {"pictures", d.Pictures}} {
		for _, f := range list.fields {
			if !dataField.MatchString(f) {
				return fmt.Errorf("dataScope.%s: %q is not a field (\"a.b\", \"*\" for every item)", list.name, f)
			}
		}
	}
	for _, g := range d.Groups {
		if _, ok := props[g]; !ok {
			return fmt.Errorf("dataScope.groups: %q is not an argument of inputSchema", g)
		}
	}
	return nil
}

// ToolAnnotations are MCP's hints about a tool.
type ToolAnnotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// Action is one named action of a tool.
type Action struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Permissions []string `json:"permissions,omitempty"` // replaces the tool's for this action
	ConfirmAt   string   `json:"confirmAt,omitempty"`   // replaces the tool's for this action
}

// PermissionKinds are the kinds of permission a tool or action may need
// (seed 000, "The person's permissions"): a change, a heavy job (estimated
// against 10 s), a file written, a saved thing deleted, a large download,
// something published, a recording paused.
var PermissionKinds = []string{"change", "heavy", "writes-file", "deletes-saved", "large-download", "publishes", "pauses-recording"}

func checkPermissions(kinds []string, confirmAt string) error {
	if confirmAt != "" && confirmAt != "start" && confirmAt != "handler" {
		return fmt.Errorf("confirmAt: %q must be \"start\" or \"handler\"", confirmAt)
	}
	seen := make(map[string]bool, len(kinds))
	for _, k := range kinds {
		switch {
		case !slices.Contains(PermissionKinds, k):
			return fmt.Errorf("permissions: %q is not one of %s", k, strings.Join(PermissionKinds, ", "))
		case seen[k]:
			return fmt.Errorf("permissions: %q appears twice", k)
		}
		seen[k] = true
	}
	return nil
}

// UIResource is an MCP Apps view the host may draw beside a tool's results.
type UIResource struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType"`
	Text        string          `json:"text,omitempty"`
	Blob        string          `json:"blob,omitempty"` // base64, for a static resource's bytes
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// UIMimeType is the MIME type of an MCP Apps view.
const UIMimeType = "text/html;profile=mcp-app"

// Result kinds of Tool.Result.
const (
	ResultCells     = "cells"
	ResultSummaries = "summaries"
	ResultNone      = "none"
)

//go:embed probe_bundle.json
var probeBundle []byte

//go:embed conformance_bundle.json
var conformanceBundle []byte

// ConformanceBundle returns the catalogue of the MCP conformance suite's
// fixture tools, which `tabrelay tab --bundle conformance` runs.
func ConformanceBundle() *Bundle {
	b, err := LoadBundle(conformanceBundle)
	if err != nil {
		panic("protocol: the embedded conformance bundle is invalid: " + err.Error())
	}
	return b
}

// ProbeBundle returns the probe app's bundle: the tools of the headless
// tab (`tabrelay tab`, headless/), made to probe a relay (a counter, notes,
// echo, wait, fail, a picture). The end-to-end tests run on it.
func ProbeBundle() *Bundle {
	b, err := LoadBundle(probeBundle)
	if err != nil {
		panic("protocol: the embedded probe bundle is invalid: " + err.Error())
	}
	return b
}

// ProbeBundleJSON returns the probe bundle as shipped.
func ProbeBundleJSON() []byte { return bytes.Clone(probeBundle) }

var (
	namePattern    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	appNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)
)

// LoadBundle decodes and checks a bundle. An error names the field at
// fault ("tools[2].inputSchema: …"), so that whoever ships a bad bundle
// learns what to fix at the relay's start, not at a host's first call.
func LoadBundle(data []byte) (*Bundle, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Bundle
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	if dec.More() {
		return nil, errors.New("bundle: data after the bundle's JSON object")
	}
	if err := b.check(); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	return &b, nil
}

func (b *Bundle) check() error {
	switch {
	case strings.TrimSpace(b.Version) == "":
		return errors.New("version: required")
	case b.Protocol != Version:
		return fmt.Errorf("protocol: %d is not the protocol this relay speaks (%d)", b.Protocol, Version)
	case !appNamePattern.MatchString(b.App.Name):
		return fmt.Errorf("app.name: %q must match %s", b.App.Name, appNamePattern)
	case strings.TrimSpace(b.App.Title) == "":
		return errors.New("app.title: required")
	case b.DataTag != "" && !ValidDataTag(b.DataTag):
		return fmt.Errorf("dataTag: %q must be lowercase letters, digits and dashes, starting with a letter", b.DataTag)
	case len(b.Tools) == 0:
		return errors.New("tools: at least one tool is required")
	}
	uris := make(map[string]bool, len(b.Resources))
	for i, r := range b.Resources {
		if err := r.check(); err != nil {
			return fmt.Errorf("resources[%d].%w", i, err)
		}
		if uris[r.URI] {
			return fmt.Errorf("resources[%d].uri: %q appears twice", i, r.URI)
		}
		uris[r.URI] = true
	}
	if err := b.checkPrompts(); err != nil {
		return err
	}
	for i, t := range b.Templates {
		if !strings.Contains(t.URITemplate, "://") || !strings.Contains(t.URITemplate, "{") || t.Name == "" || t.MimeType == "" {
			return fmt.Errorf("resourceTemplates[%d]: needs a uriTemplate with a {part}, a name and a mimeType", i)
		}
	}
	names := make(map[string]bool, len(b.Tools))
	for i := range b.Tools {
		t := &b.Tools[i] // check compiles the tool's inputSchema into it
		if err := t.check(uris); err != nil {
			return fmt.Errorf("tools[%d].%w", i, err)
		}
		if names[t.Name] {
			return fmt.Errorf("tools[%d].name: %q appears twice", i, t.Name)
		}
		names[t.Name] = true
	}
	if err := checkAnswersAt(b.AnswersAt); err != nil {
		return err
	}
	if err := checkNamedTools("instructions", b.Instructions, names); err != nil {
		return err
	}
	return checkNamedTools("answersAt", b.AnswersAt, names)
}

// maxAnswersAt bounds answersAt: it goes into the relay's own sentences,
// which must stay short.
const maxAnswersAt = 200

func checkAnswersAt(s string) error {
	switch {
	case s == "":
		return nil
	case utf8.RuneCountInString(s) > maxAnswersAt:
		return fmt.Errorf("answersAt: at most %d characters", maxAnswersAt)
	case strings.TrimSpace(s) != s || strings.ContainsAny(s, "<\n\r"):
		return errors.New("answersAt: one line of words, without '<' or spaces around it")
	}
	return nil
}

// backticked finds the `…` spans of a text.
var backticked = regexp.MustCompile("`([^`\n]+)`")

// checkNamedTools holds field's text to the catalogue: every bare name it
// writes in backticks (a span like a tool name) must be one of the tools,
// so that it never sends an agent to a tool that does not exist (seed 000:
// "a tool it names in backticks must exist"). Other backticked text (with
// spaces or punctuation, like `counter:get`) is not taken for a tool name.
func checkNamedTools(field, text string, tools map[string]bool) error {
	for _, m := range backticked.FindAllStringSubmatch(text, -1) {
		if name := m[1]; namePattern.MatchString(name) && !tools[name] {
			return fmt.Errorf("%s: names the tool `%s`, which the bundle does not have", field, name)
		}
	}
	return nil
}

func (t *Tool) check(uris map[string]bool) error {
	switch {
	case !namePattern.MatchString(t.Name):
		return fmt.Errorf("name: %q must match %s", t.Name, namePattern)
	case strings.TrimSpace(t.Description) == "":
		return errors.New("description: required (hosts show it, and conformance checks it)")
	case t.Result != "" && t.Result != ResultCells && t.Result != ResultSummaries && t.Result != ResultNone:
		return fmt.Errorf("result: %q must be %q, %q or %q (or left out: unclassified)", t.Result, ResultCells, ResultSummaries, ResultNone)
	case t.UI != "" && (!uris[t.UI] || !strings.HasPrefix(t.UI, "ui://")):
		return fmt.Errorf("ui: %q is not one of the bundle's ui:// views", t.UI)
	}
	if err := checkPermissions(t.Permissions, t.ConfirmAt); err != nil {
		return err
	}
	props, err := objectSchemaProperties(t.InputSchema)
	if err != nil {
		return fmt.Errorf("inputSchema: %w", err)
	}
	if t.args, err = compileArgumentSchema(t.InputSchema); err != nil {
		return fmt.Errorf("inputSchema: %w", err)
	}
	if err := t.DataScope.check(props); err != nil {
		return err
	}
	if len(t.Actions) == 0 {
		return nil
	}
	if _, ok := props["action"]; !ok {
		return errors.New("inputSchema: a tool with actions must declare an \"action\" property")
	}
	seen := make(map[string]bool, len(t.Actions))
	for j, a := range t.Actions {
		switch {
		case !namePattern.MatchString(a.Name) || a.Name == AllActions:
			return fmt.Errorf("actions[%d].name: %q must match %s", j, a.Name, namePattern)
		case seen[a.Name]:
			return fmt.Errorf("actions[%d].name: %q appears twice", j, a.Name)
		}
		if err := checkPermissions(a.Permissions, a.ConfirmAt); err != nil {
			return fmt.Errorf("actions[%d].%w", j, err)
		}
		seen[a.Name] = true
	}
	return nil
}

// check holds a resource to its kind: a view (ui://, MCP Apps HTML), or a
// static resource the app ships (any other scheme: its text or its bytes).
func (r *UIResource) check() error {
	scheme, rest, ok := strings.Cut(r.URI, "://")
	switch {
	case !ok || rest == "" || !namePattern.MatchString(scheme):
		return fmt.Errorf("uri: %q must be an absolute URI like ui://app/view", r.URI)
	case strings.TrimSpace(r.Name) == "":
		return errors.New("name: required")
	case scheme == "ui" && r.MimeType != UIMimeType:
		return fmt.Errorf("mimeType: %q must be %q for a ui:// view", r.MimeType, UIMimeType)
	case scheme == "ui" && r.Text == "":
		return errors.New("text: required (the view's HTML)")
	case r.MimeType == "":
		return errors.New("mimeType: required")
	case (r.Text == "") == (r.Blob == ""):
		return errors.New("text or blob: exactly one is required")
	}
	if r.Blob != "" {
		if _, err := base64.StdEncoding.DecodeString(r.Blob); err != nil {
			return errors.New("blob: must be standard base64")
		}
	}
	return nil
}

// objectSchemaProperties checks that schema is a JSON Schema of an object
// (what MCP requires of a tool's input) and returns its properties.
func objectSchemaProperties(schema json.RawMessage) (map[string]json.RawMessage, error) {
	if len(schema) == 0 {
		return nil, errors.New("required")
	}
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema object: %v", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("type must be \"object\", not %q", s.Type)
	}
	return s.Properties, nil
}

func (b *Bundle) checkPrompts() error {
	seen := map[string]bool{}
	for i, p := range b.Prompts {
		switch {
		case !namePattern.MatchString(p.Name) || seen[p.Name]:
			return fmt.Errorf("prompts[%d].name: %q must match %s and be unique", i, p.Name, namePattern)
		case strings.TrimSpace(p.Description) == "":
			return fmt.Errorf("prompts[%d].description: required", i)
		case len(p.Messages) == 0:
			return fmt.Errorf("prompts[%d].messages: at least one is required", i)
		}
		seen[p.Name] = true
		for j, m := range p.Messages {
			if m.Role != "user" && m.Role != "assistant" {
				return fmt.Errorf("prompts[%d].messages[%d].role: %q must be user or assistant", i, j, m.Role)
			}
			switch m.Content.Type {
			case "text", "image":
			case "resource":
				if m.Content.Resource == nil || m.Content.Resource.URI == "" {
					return fmt.Errorf("prompts[%d].messages[%d].content.resource: a uri is required", i, j)
				}
			default:
				return fmt.Errorf("prompts[%d].messages[%d].content.type: %q must be text, image or resource", i, j, m.Content.Type)
			}
		}
	}
	return nil
}

// Prompt returns the prompt named name.
func (b *Bundle) Prompt(name string) (*Prompt, bool) {
	for i := range b.Prompts {
		if b.Prompts[i].Name == name {
			return &b.Prompts[i], true
		}
	}
	return nil, false
}

// Tool returns the tool named name.
func (b *Bundle) Tool(name string) (*Tool, bool) {
	for i := range b.Tools {
		if b.Tools[i].Name == name {
			return &b.Tools[i], true
		}
	}
	return nil, false
}

// HasAction reports whether t declares an action named name.
func (t *Tool) HasAction(name string) bool {
	return slices.ContainsFunc(t.Actions, func(a Action) bool { return a.Name == name })
}

// Tag returns the data tags' name.
func (b *Bundle) Tag() string {
	if b.DataTag == "" {
		return DefaultDataTag
	}
	return b.DataTag
}
