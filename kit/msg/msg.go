// Package msg is lab's message catalog: every sentence a student reads
// from lab (lab list, lab check's report, hint, watch, errors, --help) is
// a message with an ID, in English (catalog/en.toml) and Simplified Chinese
// (catalog/zh-CN.toml). The language is chosen once per process (Choose,
// Set): --lang, else LC_ALL, LC_MESSAGES, LANG (zh* is Chinese), else
// English.
//
// The catalog is go-i18n's (github.com/nicksnyder/go-i18n/v2): a bundle of
// message files by language, looked up by ID, with English as the fallback
// and a MessageNotFoundErr for an ID a language lacks, which the parity test
// (TestEveryMessageHasChineseText) turns into a failure. A message's text is
// a Go format string (fmt's verbs; %[2]s where Chinese puts the arguments
// in another order), so the English output is byte for byte what fmt
// printed before the catalog. golang.org/x/text/message was the other
// candidate: its printer formats numbers by locale (1234 prints as "1,234"
// in English), which would change lab's English output and its figures.
package msg

import (
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/BurntSushi/toml"
	"github.com/nicksnyder/go-i18n/v2/i18n"
	"golang.org/x/text/language"
)

// Lang is a language lab speaks.
type Lang string

const (
	English Lang = "en"
	Chinese Lang = "zh-CN"
)

// Langs are the languages of the catalog, English first.
var Langs = []Lang{English, Chinese}

//go:embed catalog/*.toml
var files embed.FS

var (
	bundle     *i18n.Bundle
	localizers = map[Lang]*i18n.Localizer{}
	current    atomic.Value // Lang
)

func init() {
	bundle = i18n.NewBundle(language.English)
	bundle.RegisterUnmarshalFunc("toml", toml.Unmarshal)
	for _, l := range Langs {
		name := "catalog/" + string(l) + ".toml"
		data, err := files.ReadFile(name)
		if err != nil {
			panic(err)
		}
		bundle.MustParseMessageFileBytes(data, name)
		localizers[l] = i18n.NewLocalizer(bundle, string(l))
	}
	current.Store(English)
}

// Set makes l the language of every message from now on.
func Set(l Lang) { current.Store(l) }

// Current is the language messages are in.
func Current() Lang { return current.Load().(Lang) }

// ErrUnknownLang is returned by Parse for a language lab does not speak.
var ErrUnknownLang = errors.New("unknown language")

// Parse accepts a --lang value: en, zh, zh-CN, zh_CN, zh-Hans (any case).
func Parse(s string) (Lang, error) {
	switch t := strings.ToLower(strings.ReplaceAll(s, "_", "-")); {
	case t == "en" || strings.HasPrefix(t, "en-"):
		return English, nil
	case t == "zh" || strings.HasPrefix(t, "zh-"):
		return Chinese, nil
	}
	return English, fmt.Errorf("%w %q (want en or zh)", ErrUnknownLang, s)
}

// FromEnv is the language the environment asks for: the first of LC_ALL,
// LC_MESSAGES and LANG that is set decides (as for any POSIX program);
// zh… is Chinese, anything else English.
func FromEnv(getenv func(string) string) Lang {
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if v := getenv(k); v != "" {
			if strings.HasPrefix(strings.ToLower(v), "zh") {
				return Chinese
			}
			return English
		}
	}
	return English
}

// T returns message id in the current language, formatted with args as
// fmt.Sprintf would. An ID missing from the current language falls back
// to English; an ID missing from the catalog returns the ID itself (the
// catalog tests fail on both).
func T(id string, args ...any) string { return In(Current(), id, args...) }

// In is T in language l.
func In(l Lang, id string, args ...any) string {
	text, err := lookup(l, id)
	if err != nil && text == "" {
		text = id
	}
	if len(args) == 0 {
		return text
	}
	return fmt.Sprintf(text, args...)
}

// lookup returns the text of id in l; err is non-nil when l has no text
// for it (text is then the English one, or "").
func lookup(l Lang, id string) (string, error) {
	loc, ok := localizers[l]
	if !ok {
		loc = localizers[English]
	}
	return loc.Localize(&i18n.LocalizeConfig{MessageID: id})
}

// Has reports whether language l has its own text for id.
func Has(l Lang, id string) bool {
	_, err := lookup(l, id)
	return err == nil
}

// IDs returns every message ID of language l's catalog file.
func IDs(l Lang) ([]string, error) {
	name := "catalog/" + string(l) + ".toml"
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, err
	}
	mf, err := i18n.ParseMessageFileBytes(data, name, map[string]i18n.UnmarshalFunc{"toml": toml.Unmarshal})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(mf.Messages))
	for i, m := range mf.Messages {
		ids[i] = m.ID
	}
	return ids, nil
}

// Pick returns en or zh, whichever is the current language's: for text
// kept beside the code rather than in the catalog (a story from a
// mutant's file, a lesson page), with English when there is no Chinese.
func Pick(en, zh string) string {
	if Current() == Chinese && zh != "" {
		return zh
	}
	return en
}

// Twin returns the current language's edition of an English page path
// ("lessons/14/README.md" → "lessons/14/README.zh-CN.md"; "lessons/14/hint.md"
// → "lessons/14/hint.zh-CN.md"); in English, the path itself.
func Twin(path string) string {
	if Current() != Chinese {
		return path
	}
	return ZhPath(path)
}

// ZhPath is the Chinese edition's path of an English page.
func ZhPath(path string) string {
	if base, ok := strings.CutSuffix(path, ".md"); ok {
		return base + ".zh-CN.md"
	}
	return path
}

// Error is an error whose text is message id, in the language current when
// it is printed; errors.Is matches it by ID.
type Error string

func (e Error) Error() string { return T(string(e)) }
