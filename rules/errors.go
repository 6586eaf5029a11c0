package rules

// ValidationError reports why a rule definition was refused: Path names the
// offending element (for example "conditions[1].operator",
// "outcomes[0].value.id" or "priority"; empty for the document itself) and
// Message says what is wrong with it. Messages never reveal whether an account
// exists.
type ValidationError struct {
	Path    string
	Message string
}

// Error returns "<path>: <message>", or the message alone when Path is empty.
func (e *ValidationError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// invalid builds a *ValidationError.
func invalid(path, message string) *ValidationError {
	return &ValidationError{Path: path, Message: message}
}

// joinPath appends a member name to a path.
func joinPath(path, name string) string {
	if name == "" {
		return path
	}
	if path == "" {
		return name
	}
	return path + "." + name
}
