// Package templateflag registers --chat-template-file (llama.cpp's flag): a Jinja chat template
// that replaces the checkpoint's own, for every command that renders conversations (cmd/serve,
// a chat command).
//
//	--chat-template-file qwen3.jinja
//
// A command registers the flag with Var and, once the checkpoint is loaded, builds its
// template with Template, which reads the file when one was given.
package templateflag

import (
	"flag"

	"github.com/posformer/posformer/tokenizer/chat"
)

// Name is the flag's name.
const Name = "chat-template-file"

// Usage is the flag's help text.
const Usage = "Jinja chat template replacing the checkpoint's (GGUF tokenizer.chat_template, tokenizer_config.json's chat_template)"

// Var adds --chat-template-file to fs, its value landing in p ("": the checkpoint's template).
func Var(fs *flag.FlagSet, p *string) { fs.StringVar(p, Name, "", Usage) }

// Template is the chat template of a checkpoint whose own Jinja source is checkpoint ("" when
// it has none), replaced by the file at path when path is not "", with bos and eos the text of
// its BOS and EOS tokens.
func Template(path, checkpoint, bos, eos string) (chat.Template, error) {
	if path != "" {
		src, err := chat.FromFile(path)
		if err != nil {
			return chat.Template{}, err
		}
		checkpoint = src
	}
	return chat.New(checkpoint, bos, eos), nil
}
