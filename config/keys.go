package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/finsync/finsync/api/cursor"
	"github.com/finsync/finsync/secrets"
)

// keysHelp says how to make a key; every refusal to start for want of one
// quotes it.
const keysHelp = "make each with `finsync keys generate` or `openssl rand -hex 32`, and give every serve and worker process the same values " +
	"(several keys, comma-separated and newest first, rotate a key without downtime: see README, Rotating keys)"

// Names of the shared keys' variables.
const (
	EncryptionKeyVar = "FINSYNC_ENCRYPTION_KEY"
	CursorKeyVar     = "FINSYNC_CURSOR_KEY"
)

// setEncryptionKey parses FINSYNC_ENCRYPTION_KEY into EncryptionBox, or
// keeps why it does not parse; blank leaves it unset.
func (c *Config) setEncryptionKey(s string) {
	c.EncryptionBox, c.encryptionErr = nil, nil
	if strings.TrimSpace(s) == "" {
		return
	}
	box, err := secrets.FromHex(s)
	if err != nil {
		c.encryptionErr = fmt.Errorf("%s: %w", EncryptionKeyVar, err)
		return
	}
	c.EncryptionBox = box
}

// setCursorKey parses FINSYNC_CURSOR_KEY into CursorKeys, or keeps why it
// does not parse; blank leaves it unset.
func (c *Config) setCursorKey(s string) {
	c.CursorKeys, c.cursorErr = nil, nil
	if strings.TrimSpace(s) == "" {
		return
	}
	keys, err := cursor.ParseKeys(s)
	if err != nil {
		c.cursorErr = fmt.Errorf("%s: %w", CursorKeyVar, err)
		return
	}
	c.CursorKeys = keys
}

// unsetKeys names the shared keys that are not configured.
func (c Config) unsetKeys() []string {
	var unset []string
	if c.EncryptionBox == nil && c.encryptionErr == nil {
		unset = append(unset, EncryptionKeyVar)
	}
	if c.CursorKeys == nil && c.cursorErr == nil {
		unset = append(unset, CursorKeyVar)
	}
	return unset
}

// errKeysUnset says which keys are missing and how to make them.
func errKeysUnset(names []string) error {
	verb := "is"
	if len(names) > 1 {
		verb = "are"
	}
	return fmt.Errorf("%s %s not set: %s", strings.Join(names, " and "), verb, keysHelp)
}

// Box is the encryption box of FINSYNC_ENCRYPTION_KEY: the first key
// seals, every one opens. It fails, saying how to make a key, when the
// variable is unset or invalid.
func (c Config) Box() (*secrets.Box, error) {
	switch {
	case c.encryptionErr != nil:
		return nil, c.encryptionErr
	case c.EncryptionBox == nil:
		return nil, errKeysUnset([]string{EncryptionKeyVar})
	}
	return c.EncryptionBox, nil
}

// Cursor is the keys of FINSYNC_CURSOR_KEY, newest first: the first signs
// new cursors, every one opens them. It fails when the variable is unset
// or invalid.
func (c Config) Cursor() ([][]byte, error) {
	switch {
	case c.cursorErr != nil:
		return nil, c.cursorErr
	case c.CursorKeys == nil:
		return nil, errKeysUnset([]string{CursorKeyVar})
	}
	return c.CursorKeys, nil
}

// RequireKeys checks, before a serve or worker process starts, that both
// keys every process of a fleet must share are configured and valid, and
// returns the encryption box. The error names every key that is missing,
// else every one that is invalid.
func (c Config) RequireKeys() (*secrets.Box, error) {
	if unset := c.unsetKeys(); len(unset) > 0 {
		return nil, errKeysUnset(unset)
	}
	box, boxErr := c.Box()
	_, cursorErr := c.Cursor()
	if err := errors.Join(boxErr, cursorErr); err != nil {
		return nil, err
	}
	return box, nil
}

// DefaultKeys gives each shared key that is unset (not one set but
// invalid) the key that keyFor returns for its variable's name, as `finsync
// dev` does with its demo keys. It fails when keyFor fails or its key does
// not parse.
func (c *Config) DefaultKeys(keyFor func(variable string) (string, error)) error {
	for _, name := range c.unsetKeys() {
		key, err := keyFor(name)
		if err != nil {
			return err
		}
		if name == EncryptionKeyVar {
			c.setEncryptionKey(key)
		} else {
			c.setCursorKey(key)
		}
	}
	if c.encryptionErr != nil {
		return c.encryptionErr
	}
	return nil
}
