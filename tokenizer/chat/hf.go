package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// HFTemplate reads chat_template from a Hugging Face directory's tokenizer_config.json: a
// string, or a list of named templates of which "default" is the one used for chat. It is ""
// when the directory has none.
func HFTemplate(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the chat template: %w", err)
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("reading %s: %w", filepath.Join(dir, "tokenizer_config.json"), err)
	}
	var one string
	if json.Unmarshal(cfg.ChatTemplate, &one) == nil {
		return one, nil
	}
	var named []struct{ Name, Template string }
	if json.Unmarshal(cfg.ChatTemplate, &named) == nil {
		for _, t := range named {
			if t.Name == "default" {
				return t.Template, nil
			}
		}
	}
	return "", nil
}

// HFTokens reads the text of the BOS and EOS tokens from a Hugging Face directory's
// tokenizer_config.json (a string or an AddedToken object each; "" when absent or null), the
// bos_token and eos_token a chat template sees.
func HFTokens(dir string) (bos, eos string, err error) {
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("reading the special tokens: %w", err)
	}
	var cfg struct {
		BOS json.RawMessage `json:"bos_token"`
		EOS json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", "", fmt.Errorf("reading %s: %w", filepath.Join(dir, "tokenizer_config.json"), err)
	}
	return tokenText(cfg.BOS), tokenText(cfg.EOS), nil
}

// tokenText is a token as tokenizer_config.json gives it: a string or {"content": ...}.
func tokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var added struct{ Content string }
	if json.Unmarshal(raw, &added) == nil {
		return added.Content
	}
	return ""
}
